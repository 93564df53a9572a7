#include "codegen/kernel_families.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "ir/ops/reduction_util.hpp"
#include "ir/ops/window_geometry.hpp"
#include "util/error.hpp"

namespace orchid::codegen {

namespace {

constexpr std::int64_t kMaxGroups = 65536;
constexpr int kBlock = 256;

std::int64_t capped_groups(std::int64_t work_items) {
  return std::clamp<std::int64_t>(work_items, 1, kMaxGroups);
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// Stores every tensor of the stage at `coords` of the space (their shape is the
// space's shape).
void store_all(KernelWriter& w, const std::vector<std::string>& stores, const Coords& coords) {
  for (const auto& t : stores) w.store(t, coords, w.value(t, coords));
}

void check_f32(const Graph& g, const Node& n) {
  for (const auto& t : n.inputs) {
    if (!t.empty() && g.tensor(t).dtype != DType::F32) {
      unsupported("{}: device code computes {} on float32 only", n.describe(), n.op_type);
    }
  }
}

// Four lanes along the innermost axis: `base` holds the coordinates of a vector of
// `shape` with the innermost extent divided by 4; returns the coordinates of each lane.
std::vector<Coords> lane_coords(KernelWriter& w, Coords base) {
  const std::string& I = w.index_type();
  Coords lanes;
  for (int j = 0; j < 4; ++j) {
    const std::string v = w.fresh("lane");
    w.line(fmt::format("const {} {} = ({}) * 4 + {};", I, v, base.back(), j));
    lanes.push_back(v);
  }
  w.set_vector_lanes(lanes);
  std::vector<Coords> out;
  for (const auto& l : lanes) {
    base.back() = l;
    out.push_back(base);
  }
  return out;
}

Shape quarter_innermost(Shape s) {
  s.back() /= 4;
  return s;
}

std::int64_t write_map(KernelWriter& w, const StageSpec& s) {
  const Shape& space = w.graph().tensor(s.stores.front()).shape;
  const std::int64_t total = shape_numel(space);
  const std::string& I = w.index_type();
  // float4 variant: four consecutive elements of the innermost axis per thread.
  const bool vector =
      !space.empty() && space.back() % 4 == 0 && total > 0 && w.vector_friendly(s.stores);
  const std::int64_t items = vector ? total / 4 : total;
  w.open(
      fmt::format("for ({0} i = ({0})GROUP_ID * ORCHID_BLOCK + LOCAL_ID; i < {1}; i += "
                  "({0})NUM_GROUPS * ORCHID_BLOCK)",
                  I, items));
  if (vector) {
    const std::vector<Coords> lanes = lane_coords(w, w.delinearize("i", quarter_innermost(space)));
    for (const auto& t : s.stores) {
      std::vector<std::string> values;
      for (const auto& c : lanes) values.push_back(w.value(t, c));
      w.store_lanes(t, lanes, values);
    }
    w.clear_vector_lanes();
  } else {
    store_all(w, s.stores, w.delinearize("i", space));
  }
  w.close();
  return capped_groups(ceil_div(items, kBlock));
}

struct ReduceOp {
  std::string init, combine, finish;  // patterns over {0} and {1}
};

ReduceOp reduce_op(const Node& n, DType dtype, std::int64_t count) {
  const std::string& op = n.op_type;
  const bool f = dtype == DType::F32 || dtype == DType::F64;
  if (op == "ReduceSum") return {literal(0, dtype), "{0} + {1}", "{0}"};
  if (op == "ReduceMean") {
    if (!f) unsupported("{}: integer ReduceMean has no device code", n.describe());
    return {literal(0, dtype), "{0} + {1}",
            fmt::format("{{0}} / {}", literal(static_cast<double>(count), dtype))};
  }
  if (op == "ReduceProd") return {literal(1, dtype), "{0} * {1}", "{0}"};
  if (op == "ReduceMax") {
    return {f ? literal(-INFINITY, dtype) : literal(-9.2e18, dtype),
            f ? "fmaxf({0}, {1})" : "({0} > {1} ? {0} : {1})", "{0}"};
  }
  if (op == "ReduceMin") {
    return {f ? literal(INFINITY, dtype) : literal(9.2e18, dtype),
            f ? "fminf({0}, {1})" : "({0} < {1} ? {0} : {1})", "{0}"};
  }
  unsupported("{}: no device code for op type '{}'", n.describe(), op);
}

std::string apply(const std::string& pattern, const std::string& a, const std::string& b) {
  return fmt::format(fmt::runtime(pattern), a, b);
}

bool is_arg_reduce(const Node& n) {
  return n.op_type == "ArgMax" || n.op_type == "ArgMin";
}

// ArgMax / ArgMin of one row: each thread keeps its best (value, index) over its
// columns, then a shared-memory tree keeps the better of two, ties going to the lower
// index (the higher with select_last_index), as the reference's sequential scan does.
// Index -1 marks "nothing yet". `open_columns` opens the column loop and returns the
// elements a thread takes per iteration. Returns the variable holding the row's index.
std::string write_arg_reduce(KernelWriter& w, const Node& n, std::size_t axis,
                             const std::function<std::vector<Coords>()>& open_columns,
                             std::string* shared) {
  const Graph& g = w.graph();
  const std::string T = KernelWriter::c_type(g.tensor(n.inputs[0]).dtype);
  const std::string cmp = n.op_type == "ArgMax" ? ">" : "<";
  const std::string tie = n.attr_int("select_last_index", 0) != 0 ? ">" : "<";
  // Whether (v, i) beats (bv, bi).
  auto better = [&](const std::string& v, const std::string& i, const std::string& bv,
                    const std::string& bi) {
    return fmt::format("({3} < 0 || {0} {4} {2} || ({0} == {2} && {1} {5} {3}))", v, i, bv, bi, cmp,
                       tie);
  };
  const std::string red = w.fresh("red"), redi = w.fresh("redi");
  *shared +=
      fmt::format("  SHARED {} {}[ORCHID_BLOCK];\n  SHARED i64 {}[ORCHID_BLOCK];\n", T, red, redi);
  const std::string bv = w.fresh("bv"), bi = w.fresh("bi");
  w.line(fmt::format("{} {} = 0;", T, bv));
  w.line(fmt::format("i64 {} = -1;", bi));
  for (const auto& c : open_columns()) {
    const std::string v = w.value(n.inputs[0], c);
    const std::string i = fmt::format("(i64)({})", c[axis]);
    w.open(fmt::format("if ({})", better(v, i, bv, bi)));
    w.line(fmt::format("{} = {};", bv, v));
    w.line(fmt::format("{} = {};", bi, i));
    w.close();
  }
  w.clear_vector_lanes();
  w.close();
  w.line(fmt::format("{}[LOCAL_ID] = {};", red, bv));
  w.line(fmt::format("{}[LOCAL_ID] = {};", redi, bi));
  w.line("BARRIER();");
  w.open("for (int s = ORCHID_BLOCK / 2; s > 0; s >>= 1)");
  w.open(fmt::format("if (LOCAL_ID < s && {}[LOCAL_ID + s] >= 0 && {})", redi,
                     better(red + "[LOCAL_ID + s]", redi + "[LOCAL_ID + s]", red + "[LOCAL_ID]",
                            redi + "[LOCAL_ID]")));
  w.line(fmt::format("{0}[LOCAL_ID] = {0}[LOCAL_ID + s];", red));
  w.line(fmt::format("{0}[LOCAL_ID] = {0}[LOCAL_ID + s];", redi));
  w.close();
  w.line("BARRIER();");
  w.close();
  const std::string best = w.fresh("best");
  w.line(fmt::format("const i64 {} = {}[0];", best, redi));
  w.line("BARRIER();  // the shared arrays are reused by the next row");
  return best;
}

std::int64_t write_row(KernelWriter& w, const StageSpec& s, std::string* shared) {
  const Graph& g = w.graph();
  std::vector<bool> reduced;
  const Shape space = row_space(g, *s.roots.front(), &reduced);
  Shape kept = space, inner = space;
  for (std::size_t d = 0; d < space.size(); ++d) (reduced[d] ? kept : inner)[d] = 1;
  const std::int64_t rows = shape_numel(kept), cols = shape_numel(inner);
  const std::string& I = w.index_type();
  w.open(fmt::format("for ({0} row = GROUP_ID; row < {1}; row += NUM_GROUPS)", I, rows));
  const Coords rc = w.delinearize("row", kept);
  auto merged = [&](const Coords& cc) {
    Coords full = rc;
    for (std::size_t d = 0; d < space.size(); ++d) {
      if (reduced[d]) full[d] = cc[d];
    }
    return full;
  };
  auto full_coords = [&](const std::string& col) { return merged(w.delinearize(col, inner)); };
  // float4 variant: the innermost axis is reduced and a multiple of 4, and the row's
  // values reach memory through elementwise ops only; each thread takes 4 columns.
  auto vector_for = [&](const std::vector<std::string>& tensors) {
    return reduced.back() && space.back() % 4 == 0 && cols > 0 && w.vector_friendly(tensors);
  };
  // Opens the column loop; returns the coordinates of each element a thread handles.
  auto open_columns = [&](bool vector) {
    if (!vector) {
      w.open(fmt::format("for ({0} col = LOCAL_ID; col < {1}; col += ORCHID_BLOCK)", I, cols));
      return std::vector<Coords>{full_coords("col")};
    }
    w.open(fmt::format("for ({0} col = LOCAL_ID; col < {1}; col += ORCHID_BLOCK)", I, cols / 4));
    std::vector<Coords> lanes = lane_coords(w, w.delinearize("col", quarter_innermost(inner)));
    for (auto& c : lanes) c = merged(c);
    return lanes;
  };
  // A row value's coordinates in its own shape: the kept shape, or without the reduced
  // axes (keepdims=0).
  auto row_coords = [&](const std::string& t) {
    const Shape& shape = g.tensor(t).shape;
    if (shape.size() == space.size()) return rc;
    Coords c;
    for (std::size_t d = 0; d < space.size(); ++d) {
      if (!reduced[d]) c.push_back(rc[d]);
    }
    return c;
  };
  std::size_t arg_axis = space.size();
  for (std::size_t d = 0; d < space.size(); ++d) {
    if (reduced[d]) arg_axis = d;
  }
  for (const Node* n : s.roots) {
    if (is_arg_reduce(*n)) {
      const std::string best = write_arg_reduce(
          w, *n, arg_axis, [&] { return open_columns(vector_for({n->inputs[0]})); }, shared);
      w.bind(n->outputs[0], best, row_coords(n->outputs[0]));
      continue;
    }
    const DType dtype = g.tensor(n->outputs[0]).dtype;
    const std::string T = KernelWriter::c_type(dtype);
    const ReduceOp op = reduce_op(*n, dtype, cols);
    const std::string red = w.fresh("red");
    *shared += fmt::format("  SHARED {} {}[ORCHID_BLOCK];\n", T, red);
    const std::string acc = w.fresh("acc");
    w.line(fmt::format("{} {} = {};", T, acc, op.init));
    for (const auto& c : open_columns(vector_for({n->inputs[0]}))) {
      const std::string x = w.value(n->inputs[0], c);
      w.line(fmt::format("{} = {};", acc, apply(op.combine, acc, x)));
    }
    w.clear_vector_lanes();
    w.close();
    w.line(fmt::format("{}[LOCAL_ID] = {};", red, acc));
    w.line("BARRIER();");
    w.open("for (int s = ORCHID_BLOCK / 2; s > 0; s >>= 1)");
    w.open("if (LOCAL_ID < s)");
    w.line(fmt::format("{0}[LOCAL_ID] = {1};", red,
                       apply(op.combine, red + "[LOCAL_ID]", red + "[LOCAL_ID + s]")));
    w.close();
    w.line("BARRIER();");
    w.close();
    const std::string result = w.fresh("r");
    w.line(fmt::format("const {} {} = {};", T, result, apply(op.finish, red + "[0]", "")));
    w.line("BARRIER();  // the shared array is reused by the next row");
    w.bind(n->outputs[0], result, row_coords(n->outputs[0]));
  }
  std::vector<std::string> row_stores, full_stores;
  for (const auto& t : s.stores) {
    (shape_numel(g.tensor(t).shape) == rows && g.tensor(t).shape != space ? row_stores
                                                                          : full_stores)
        .push_back(t);
  }
  if (!row_stores.empty()) {
    w.open("if (LOCAL_ID == 0)");
    for (const auto& t : row_stores) w.store(t, row_coords(t), w.value(t, row_coords(t)));
    w.close();
  }
  if (!full_stores.empty()) {
    const std::vector<Coords> lanes = open_columns(vector_for(full_stores));
    for (const auto& t : full_stores) {
      std::vector<std::string> values;
      for (const auto& c : lanes) values.push_back(w.value(t, c));
      w.store_lanes(t, lanes, values);
    }
    w.clear_vector_lanes();
    w.close();
  }
  for (const Node* n : s.roots) w.unbind(n->outputs[0]);
  w.close();
  return capped_groups(rows);
}

std::int64_t write_window(KernelWriter& w, const StageSpec& s) {
  const Graph& g = w.graph();
  const Node& n = *s.roots.front();
  check_f32(g, n);
  const Shape& in = g.tensor(n.inputs[0]).shape;
  const Shape& out = g.tensor(n.outputs[0]).shape;
  const bool max = n.op_type == "MaxPool";
  if (n.attr_int("storage_order", 0) != 0 && max) {
    unsupported("{}: storage_order has no device code", n.describe());
  }
  const WindowGeometry geo =
      window_geometry(n, {in.begin() + 2, in.end()}, n.required_ints("kernel_shape"),
                      n.attr_int("ceil_mode", 0) != 0);
  const bool include_pad = n.attr_int("count_include_pad", 0) != 0;
  const std::int64_t total = shape_numel(out);
  const std::string& I = w.index_type();
  w.open(
      fmt::format("for ({0} i = ({0})GROUP_ID * ORCHID_BLOCK + LOCAL_ID; i < {1}; i += "
                  "({0})NUM_GROUPS * ORCHID_BLOCK)",
                  I, total));
  const Coords oc = w.delinearize("i", out);
  w.line(fmt::format("float acc = {};", max ? "-ORCHID_INF" : "0.0f"));
  w.line("int count = 0;");
  Coords xc = {oc[0], oc[1]};
  std::string valid, padded;
  for (std::size_t d = 0; d < geo.rank(); ++d) {
    const std::string k = fmt::format("k{}", d);
    w.open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", k, geo.kernel[d]));
    const std::string pos = w.fresh("x");
    w.line(fmt::format("const {} {} = ({}) * {} - {} + {} * {};", I, pos, oc[2 + d], geo.strides[d],
                       geo.pad_begin[d], k, geo.dilations[d]));
    xc.push_back(pos);
    valid += fmt::format("{}{} >= 0 && {} < {}", valid.empty() ? "" : " && ", pos, pos, in[2 + d]);
    padded += fmt::format("{}{} >= {} && {} < {}", padded.empty() ? "" : " && ", pos,
                          -geo.pad_begin[d], pos, in[2 + d] + geo.pad_end[d]);
  }
  w.line(fmt::format("count += ({}) ? 1 : 0;", include_pad ? padded : valid));
  w.open(fmt::format("if ({})", valid));
  const std::string x = w.value(n.inputs[0], xc);
  w.line(max ? fmt::format("acc = fmaxf(acc, {});", x) : fmt::format("acc += {};", x));
  w.close();
  for (std::size_t d = 0; d < geo.rank(); ++d) w.close();
  const std::string result = max ? "acc" : "(count > 0 ? acc / (float)count : 0.0f)";
  w.line(fmt::format("const float pooled = {};", result));
  w.bind(n.outputs[0], "pooled", oc);
  store_all(w, s.stores, oc);
  w.unbind(n.outputs[0]);
  w.close();
  return capped_groups(ceil_div(total, kBlock));
}

// The tiled GEMM skeleton shared by MatMul and Conv: C[b][m][n] = sum_k A(b,m,k) B(b,k,n),
// 64x64 tiles, K steps of 16. The callbacks write the loads (which may compute a
// prologue) and the epilogue of one output.
struct GemmShape {
  std::int64_t batch = 1, m = 1, n = 1, k = 1;
};

template <typename LoadA, typename LoadB, typename Epilogue>
std::int64_t write_tiled_gemm(KernelWriter& w, const GemmShape& gs, std::string* shared,
                              LoadA&& load_a, LoadB&& load_b, Epilogue&& epilogue) {
  const std::string& I = w.index_type();
  const std::int64_t tm = ceil_div(gs.m, 64), tn = ceil_div(gs.n, 64);
  const std::int64_t tiles = gs.batch * tm * tn;
  *shared += "  SHARED float As[16 * 64];\n  SHARED float Bs[16 * 64];\n";
  w.line("const int tx = LOCAL_ID % 16, ty = LOCAL_ID / 16;");
  w.open(fmt::format("for ({0} tile = GROUP_ID; tile < {1}; tile += NUM_GROUPS)", I, tiles));
  w.line(fmt::format("const {} b = tile / {};", I, tm * tn));
  w.line(fmt::format("const {} m0 = ((tile % {}) / {}) * 64;", I, tm * tn, tn));
  w.line(fmt::format("const {} n0 = (tile % {}) * 64;", I, tn));
  w.line("float acc[16];");
  w.line("for (int q = 0; q < 16; ++q) acc[q] = 0.0f;");
  w.open(fmt::format("for ({0} k0 = 0; k0 < {1}; k0 += 16)", I, gs.k));
  w.open("for (int l = LOCAL_ID; l < 1024; l += ORCHID_BLOCK)");
  w.line(fmt::format("const {0} am = m0 + l / 16, ak = k0 + l % 16;", I));
  w.line("float a = 0.0f;");
  w.open(fmt::format("if (am < {} && ak < {})", gs.m, gs.k));
  w.line(fmt::format("a = {};", load_a("b", "am", "ak")));
  w.close();
  w.line("As[(l % 16) * 64 + l / 16] = a;");
  w.close();
  w.open("for (int l = LOCAL_ID; l < 1024; l += ORCHID_BLOCK)");
  w.line(fmt::format("const {0} bk = k0 + l / 64, bn = n0 + l % 64;", I));
  w.line("float v = 0.0f;");
  w.open(fmt::format("if (bk < {} && bn < {})", gs.k, gs.n));
  w.line(fmt::format("v = {};", load_b("b", "bk", "bn")));
  w.close();
  w.line("Bs[l] = v;");
  w.close();
  w.line("BARRIER();");
  w.open("for (int kk = 0; kk < 16; ++kk)");
  w.line("float ra[4], rb[4];");
  w.line(
      "for (int q = 0; q < 4; ++q) { ra[q] = As[kk * 64 + ty * 4 + q]; rb[q] = Bs[kk * 64 + tx * 4 "
      "+ q]; }");
  w.line("for (int q = 0; q < 16; ++q) acc[q] += ra[q / 4] * rb[q % 4];");
  w.close();
  w.line("BARRIER();");
  w.close();
  w.open("for (int q = 0; q < 16; ++q)");
  w.line(fmt::format("const {} m = m0 + ty * 4 + q / 4, n = n0 + tx * 4 + q % 4;", I));
  w.open(fmt::format("if (m < {} && n < {})", gs.m, gs.n));
  epilogue("b", "m", "n", "acc[q]");
  w.close();
  w.close();
  w.close();
  return capped_groups(tiles);
}

std::int64_t write_matmul(KernelWriter& w, const StageSpec& s, std::string* shared) {
  const Graph& g = w.graph();
  const Node& node = *s.roots.front();
  check_f32(g, node);
  const Shape& as = g.tensor(node.inputs[0]).shape;
  const Shape& bs = g.tensor(node.inputs[1]).shape;
  const Shape& ys = g.tensor(node.outputs[0]).shape;
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  GemmShape gs;
  gs.k = as.back();
  gs.m = a_vec ? 1 : as[as.size() - 2];
  gs.n = b_vec ? 1 : bs.back();
  const std::size_t batch_rank = ys.size() - (a_vec ? 0 : 1) - (b_vec ? 0 : 1);
  const Shape batch(ys.begin(), ys.begin() + static_cast<std::ptrdiff_t>(batch_rank));
  gs.batch = shape_numel(batch);
  // Batch coordinates are recomputed per load: the compiler hoists what it can.
  auto batch_coords = [&w, batch](const std::string& b) { return w.delinearize(b, batch); };
  auto load_a = [&](const std::string& b, const std::string& m, const std::string& k) {
    Coords c = a_vec ? Coords{} : batch_coords(b);
    if (!a_vec) c.push_back(m);
    c.push_back(k);
    return w.value(node.inputs[0], c);
  };
  auto load_b = [&](const std::string& b, const std::string& k, const std::string& n) {
    Coords c = b_vec ? Coords{} : batch_coords(b);
    c.push_back(k);
    if (!b_vec) c.push_back(n);
    return w.value(node.inputs[1], c);
  };
  auto epilogue = [&](const std::string& b, const std::string& m, const std::string& n,
                      const std::string& acc) {
    Coords c = batch_coords(b);
    if (!a_vec) c.push_back(m);
    if (!b_vec) c.push_back(n);
    w.bind(node.outputs[0], acc, c);
    store_all(w, s.stores, c);
    w.unbind(node.outputs[0]);
  };
  return write_tiled_gemm(w, gs, shared, load_a, load_b, epilogue);
}

struct ConvGeometry {
  WindowGeometry geo;
  std::int64_t groups, cin_g, cout_g;
  Shape x, wt, y;
};

ConvGeometry conv_geometry(const Graph& g, const Node& node, bool transpose) {
  ConvGeometry c;
  c.x = g.tensor(node.inputs[0]).shape;
  c.wt = g.tensor(node.inputs[1]).shape;
  c.y = g.tensor(node.outputs[0]).shape;
  const std::vector<std::int64_t> spatial(c.x.begin() + 2, c.x.end());
  const std::vector<std::int64_t> kernel(c.wt.begin() + 2, c.wt.end());
  c.geo = transpose ? conv_transpose_geometry(node, spatial, kernel)
                    : window_geometry(node, spatial, kernel, false);
  c.groups = node.attr_int("group", 1);
  c.cin_g = c.x[1] / c.groups;
  c.cout_g = c.y[1] / c.groups;
  return c;
}

std::int64_t write_conv(KernelWriter& w, const StageSpec& s, std::string* shared) {
  const Graph& g = w.graph();
  const Node& node = *s.roots.front();
  check_f32(g, node);
  if (node.has_input(2)) unsupported("{}: Conv bias is split off by fission", node.describe());
  const ConvGeometry c = conv_geometry(g, node, false);
  const std::size_t rank = c.geo.rank();
  const std::string& I = w.index_type();
  Shape taps(c.wt.begin() + 1, c.wt.end());  // [cin_g, k...]
  Shape columns = {c.x[0]};                  // [batch, out spatial...]
  for (std::size_t d = 0; d < rank; ++d) columns.push_back(c.y[2 + d]);
  // Input coordinates of (column n, tap k); `bounds` collects the padding checks.
  auto input_coords = [&](const std::string& grp, const std::string& k, const std::string& n,
                          std::string* bounds) {
    const Coords kc = w.delinearize(k, taps);
    const Coords nc = w.delinearize(n, columns);
    Coords x = {nc[0], w.fresh("ci")};
    w.line(fmt::format("const {} {} = ({}) * {} + {};", I, x[1], grp, c.cin_g, kc[0]));
    for (std::size_t d = 0; d < rank; ++d) {
      const std::string p = w.fresh("x");
      w.line(fmt::format("const {} {} = ({}) * {} - {} + ({}) * {};", I, p, nc[1 + d],
                         c.geo.strides[d], c.geo.pad_begin[d], kc[1 + d], c.geo.dilations[d]));
      *bounds +=
          fmt::format("{}{} >= 0 && {} < {}", bounds->empty() ? "" : " && ", p, p, c.x[2 + d]);
      x.push_back(p);
    }
    return x;
  };
  auto output_coords = [&](const std::string& grp, const std::string& m, const std::string& n) {
    const Coords nc = w.delinearize(n, columns);
    Coords y = {nc[0], w.fresh("co")};
    w.line(fmt::format("const {} {} = ({}) * {} + {};", I, y[1], grp, c.cout_g, m));
    for (std::size_t d = 0; d < rank; ++d) y.push_back(nc[1 + d]);
    return y;
  };
  auto tap_value = [&](const std::string& grp, const std::string& k, const std::string& n) {
    std::string bounds;
    const Coords x = input_coords(grp, k, n, &bounds);
    const std::string v = w.fresh("t");
    w.line(fmt::format("float {} = 0.0f;", v));
    w.open(fmt::format("if ({})", bounds.empty() ? "1" : bounds));
    w.line(fmt::format("{} = {};", v, w.value(node.inputs[0], x)));
    w.close();
    return v;
  };
  auto weight_value = [&](const std::string& grp, const std::string& m, const std::string& k) {
    Coords wc = {w.fresh("wo")};
    w.line(fmt::format("const {} {} = ({}) * {} + {};", I, wc[0], grp, c.cout_g, m));
    for (const auto& x : w.delinearize(k, taps)) wc.push_back(x);
    return w.value(node.inputs[1], wc);
  };
  const std::int64_t kdim = shape_numel(taps), ndim = shape_numel(columns);
  if (c.cout_g < 16) {
    // Few outputs per group (depthwise): one thread per output, taps in a loop.
    const std::int64_t total = shape_numel(c.y);
    w.open(
        fmt::format("for ({0} i = ({0})GROUP_ID * ORCHID_BLOCK + LOCAL_ID; i < {1}; i += "
                    "({0})NUM_GROUPS * ORCHID_BLOCK)",
                    I, total));
    const Coords yc = w.delinearize("i", c.y);
    w.line(
        fmt::format("const {} grp = {} / {}, m = {} % {};", I, yc[1], c.cout_g, yc[1], c.cout_g));
    std::string n = yc[0];
    for (std::size_t d = 0; d < rank; ++d)
      n = fmt::format("({}) * {} + {}", n, c.y[2 + d], yc[2 + d]);
    w.line(fmt::format("const {} col = {};", I, n));
    w.line("float acc = 0.0f;");
    w.open(fmt::format("for ({0} k = 0; k < {1}; ++k)", I, kdim));
    const std::string wv = weight_value("grp", "m", "k");
    const std::string xv = tap_value("grp", "k", "col");
    w.line(fmt::format("acc += {} * {};", wv, xv));
    w.close();
    w.bind(node.outputs[0], "acc", yc);
    store_all(w, s.stores, yc);
    w.unbind(node.outputs[0]);
    w.close();
    return capped_groups(ceil_div(total, kBlock));
  }
  GemmShape gs{c.groups, c.cout_g, ndim, kdim};
  auto epilogue = [&](const std::string& b, const std::string& m, const std::string& n,
                      const std::string& acc) {
    const Coords yc = output_coords(b, m, n);
    w.bind(node.outputs[0], acc, yc);
    store_all(w, s.stores, yc);
    w.unbind(node.outputs[0]);
  };
  return write_tiled_gemm(
      w, gs, shared,
      [&](const std::string& b, const std::string& m, const std::string& k) {
        return weight_value(b, m, k);
      },
      [&](const std::string& b, const std::string& k, const std::string& n) {
        return tap_value(b, k, n);
      },
      epilogue);
}

std::int64_t write_conv_transpose(KernelWriter& w, const StageSpec& s) {
  const Graph& g = w.graph();
  const Node& node = *s.roots.front();
  check_f32(g, node);
  if (node.has_input(2))
    unsupported("{}: ConvTranspose bias is split off by fission", node.describe());
  const ConvGeometry c = conv_geometry(g, node, true);
  const std::size_t rank = c.geo.rank();
  const std::string& I = w.index_type();
  const std::int64_t total = shape_numel(c.y);
  w.open(
      fmt::format("for ({0} i = ({0})GROUP_ID * ORCHID_BLOCK + LOCAL_ID; i < {1}; i += "
                  "({0})NUM_GROUPS * ORCHID_BLOCK)",
                  I, total));
  const Coords yc = w.delinearize("i", c.y);
  w.line(fmt::format("const {} grp = {} / {}, m = {} % {};", I, yc[1], c.cout_g, yc[1], c.cout_g));
  w.line("float acc = 0.0f;");
  // W is [cin, cout_g, k...]; output o reads input i where o = i*s - pad + k*d.
  w.open(fmt::format("for ({0} cl = 0; cl < {1}; ++cl)", I, c.cin_g));
  Coords xc = {yc[0], "ci"}, wc = {"ci", "m"};
  w.line(fmt::format("const {} ci = grp * {} + cl;", I, c.cin_g));
  std::string cond;
  for (std::size_t d = 0; d < rank; ++d) {
    const std::string k = fmt::format("k{}", d);
    w.open(fmt::format("for ({0} {1} = 0; {1} < {2}; ++{1})", I, k, c.geo.kernel[d]));
    const std::string num = w.fresh("u");
    w.line(fmt::format("const {} {} = {} + {} - {} * {};", I, num, yc[2 + d], c.geo.pad_begin[d], k,
                       c.geo.dilations[d]));
    const std::string pos = w.fresh("x");
    w.line(fmt::format("const {} {} = {} / {};", I, pos, num, c.geo.strides[d]));
    cond += fmt::format("{}{} >= 0 && {} % {} == 0 && {} < {}", cond.empty() ? "" : " && ", num,
                        num, c.geo.strides[d], pos, c.x[2 + d]);
    xc.push_back(pos);
    wc.push_back(k);
  }
  w.open(fmt::format("if ({})", cond));
  w.line(fmt::format("acc += {} * {};", w.value(node.inputs[0], xc), w.value(node.inputs[1], wc)));
  w.close();
  for (std::size_t d = 0; d < rank; ++d) w.close();
  w.close();
  w.bind(node.outputs[0], "acc", yc);
  store_all(w, s.stores, yc);
  w.unbind(node.outputs[0]);
  w.close();
  return capped_groups(ceil_div(total, kBlock));
}

}  // namespace

std::string family_name(Family family) {
  switch (family) {
    case Family::Map:
      return "map";
    case Family::Row:
      return "row-reduce";
    case Family::Window:
      return "window";
    case Family::MatMul:
      return "matmul";
    case Family::Conv:
      return "conv";
    case Family::ConvTranspose:
      return "conv-transpose";
  }
  return "?";
}

Family anchor_family(const Node& node) {
  const std::string& op = node.op_type;
  if (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin" ||
      op == "ReduceProd" || op == "ArgMax" || op == "ArgMin") {
    return Family::Row;
  }
  if (op == "MaxPool" || op == "AveragePool") return Family::Window;
  if (op == "MatMul") return Family::MatMul;
  if (op == "Conv") return Family::Conv;
  if (op == "ConvTranspose") return Family::ConvTranspose;
  return Family::Map;
}

Shape row_space(const Graph& g, const Node& reduce, std::vector<bool>* reduced) {
  const Shape& in = g.tensor(reduce.inputs[0]).shape;
  if (is_arg_reduce(reduce)) {  // one axis, an attribute
    const auto rank = static_cast<std::int64_t>(in.size());
    const std::int64_t axis = normalize_axis(reduce.attr_int("axis", 0), rank, reduce.describe());
    reduced->assign(in.size(), false);
    if (rank > 0) (*reduced)[static_cast<std::size_t>(axis)] = true;
    return in;
  }
  const Tensor* axes = nullptr;
  if (reduce.has_input(1)) {
    if (!g.is_constant(reduce.inputs[1])) {
      unsupported("{}: reduction axes must be constant for device code", reduce.describe());
    }
    axes = g.tensor(reduce.inputs[1]).data.get();
  }
  const auto r =
      reduction_util::resolve_reduction_axes(reduce, axes, static_cast<std::int64_t>(in.size()));
  if (r.noop)
    unsupported("{}: an empty-axes no-op reduction has no device code", reduce.describe());
  *reduced = r.reduced;
  return in;
}

std::int64_t write_stage(KernelWriter& w, const StageSpec& stage, std::string* shared) {
  switch (stage.family) {
    case Family::Map:
      return write_map(w, stage);
    case Family::Row:
      return write_row(w, stage, shared);
    case Family::Window:
      return write_window(w, stage);
    case Family::MatMul:
      return write_matmul(w, stage, shared);
    case Family::Conv:
      return write_conv(w, stage, shared);
    case Family::ConvTranspose:
      return write_conv_transpose(w, stage);
  }
  return 0;
}

}  // namespace orchid::codegen
