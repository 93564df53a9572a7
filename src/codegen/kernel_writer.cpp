#include "codegen/kernel_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "codegen/elementwise_expr.hpp"
#include "codegen/search_ops.hpp"
#include "ir/ops/layout_params.hpp"
#include "util/error.hpp"

namespace orchid::codegen {

namespace {

std::string join(const Coords& c) {
  std::string out;
  for (const auto& x : c) out += x + ",";
  return out;
}

const Tensor& constant_input(const Graph& g, const Node& node, std::size_t i) {
  if (!node.has_input(i) || !g.is_constant(node.inputs[i])) {
    unsupported("{}: input {} must be a constant for device code", node.describe(), i);
  }
  return *g.tensor(node.inputs[i]).data;
}

const Tensor* optional_constant(const Graph& g, const Node& node, std::size_t i) {
  return node.has_input(i) ? &constant_input(g, node, i) : nullptr;
}

// Shape without its size-1 axes.
Shape squeezed(const Shape& s) {
  Shape out;
  for (auto d : s) {
    if (d != 1) out.push_back(d);
  }
  return out;
}

}  // namespace

std::string literal(double value, DType dtype) {
  if (dtype == DType::F32 || dtype == DType::F64 || dtype == DType::F16) {
    if (std::isnan(value)) return "(ORCHID_INF - ORCHID_INF)";
    if (std::isinf(value)) return value > 0 ? "ORCHID_INF" : "(-ORCHID_INF)";
    std::string s = fmt::format("{:.9g}", value);
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return dtype == DType::F64 ? "((double)" + s + ")" : s + "f";
  }
  return fmt::format("(({}){})", KernelWriter::c_type(dtype), static_cast<std::int64_t>(value));
}

KernelWriter::KernelWriter(const WriterEnvironment& env)
    : env_(env), index_type_(env.wide_index ? "i64" : "i32") {
  scopes_.emplace_back();
}

std::string KernelWriter::c_type(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "float";
    case DType::F64:
      return "double";
    case DType::I64:
      return "i64";
    case DType::I32:
      return "i32";
    case DType::I8:
      return "i8";
    case DType::U8:
    case DType::Bool:
      return "u8";
    case DType::F16:
    case DType::BF16:
      break;
  }
  unsupported("device code: {} tensors are not supported", dtype_name(dtype));
}

void KernelWriter::line(const std::string& text) {
  body_ << std::string(static_cast<std::size_t>(indent_) * 2, ' ') << text << '\n';
}

void KernelWriter::open(const std::string& header) {
  line(header + " {");
  ++indent_;
  scopes_.emplace_back();
}

void KernelWriter::close() {
  scopes_.pop_back();
  --indent_;
  line("}");
}

std::string KernelWriter::fresh(const std::string& prefix) {
  return prefix + std::to_string(counter_++);
}

std::string KernelWriter::temp(DType dtype, const std::string& expr) {
  const std::string v = fresh("v");
  line(fmt::format("const {} {} = {};", c_type(dtype), v, expr));
  return v;
}

std::string KernelWriter::index_temp(const std::string& expr) {
  bool plain = !expr.empty();
  for (char ch : expr) plain = plain && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_');
  if (plain) return expr;
  const std::string v = fresh("ix");
  line(fmt::format("const {} {} = {};", index_type_, v, expr));
  return v;
}

std::string KernelWriter::pointer(const std::string& t, bool writable) {
  const std::string key = t + (writable ? "#w" : "#r");
  if (auto it = pointers_.find(key); it != pointers_.end()) return it->second;
  const DeviceTensor loc = env_.locate(t);
  const std::string p = fresh("p");
  const std::string type = c_type(loc.dtype);
  const std::string cv = writable ? "" : "const ";
  decls_ << fmt::format("  GLOBAL {1}{0}* {2} = (GLOBAL {1}{0}*)({3} + {4});  // {5}\n", type, cv,
                        p, region_name(loc.region), loc.offset, t);
  pointers_[key] = p;
  return p;
}

std::string KernelWriter::table_pointer(const std::string& key,
                                        std::shared_ptr<const Tensor> table) {
  const std::string pkey = "table#" + key;
  if (auto it = pointers_.find(pkey); it != pointers_.end()) return it->second;
  const std::int64_t offset = env_.add_table(key, table);
  const std::string p = fresh("tab");
  decls_ << fmt::format("  GLOBAL const {0}* {1} = (GLOBAL const {0}*)(weights + {2});\n",
                        c_type(table->dtype()), p, offset);
  pointers_[pkey] = p;
  return p;
}

Coords KernelWriter::delinearize(const std::string& linear, const Shape& shape) {
  Coords out(shape.size(), "0");
  std::int64_t stride = 1;
  std::vector<std::int64_t> strides(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  bool first = true;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    std::string e = linear;
    if (strides[d] != 1) e = fmt::format("({} / {})", e, strides[d]);
    if (!first) e = fmt::format("({} % {})", e, shape[d]);
    first = false;
    out[d] = index_temp(e);
  }
  return out;
}

std::string KernelWriter::linearize(const Shape& shape, const Coords& coords) const {
  std::string out;
  std::int64_t stride = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1 && coords[d] != "0") {
      const std::string term =
          stride == 1 ? coords[d] : fmt::format("({}) * {}", coords[d], stride);
      out = out.empty() ? term : term + " + " + out;
    }
    stride *= shape[d];
  }
  return out.empty() ? "0" : "(" + out + ")";
}

Coords KernelWriter::normalized(const std::string& t, const Coords& coords) const {
  const Shape& shape = env_.graph->tensor(t).shape;
  if (coords.size() < shape.size()) {
    throw std::logic_error(fmt::format("device code: '{}' read with {} coordinates, rank {}", t,
                                       coords.size(), shape.size()));
  }
  const std::size_t skip = coords.size() - shape.size();
  Coords c;
  c.reserve(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    c.push_back(shape[d] == 1 ? std::string("0") : coords[skip + d]);
  }
  return c;
}

void KernelWriter::bind(const std::string& t, const std::string& reg, const Coords& coords) {
  bindings_[t] = Binding{reg, normalized(t, coords)};
}

void KernelWriter::unbind(const std::string& t) {
  bindings_.erase(t);
}

void KernelWriter::remember(const std::string& t, const Coords& coords, const std::string& v) {
  scopes_.back()[t + "@" + join(normalized(t, coords))] = v;
}

std::string KernelWriter::value(const std::string& t, const Coords& coords) {
  const TensorInfo& info = env_.graph->tensor(t);
  const Coords c = normalized(t, coords);
  if (auto it = bindings_.find(t); it != bindings_.end()) {
    if (it->second.coords != c) throw FusionRefused{t};
    return it->second.reg;
  }
  if (info.is_constant() && info.data->numel() == 1) {
    return literal(info.data->get_as_double(0), info.dtype);
  }
  const std::string key = t + "@" + join(c);
  for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
    if (auto it = s->find(key); it != s->end()) return it->second;
  }
  std::string v;
  if (auto it = env_.inline_producers.find(t); it != env_.inline_producers.end()) {
    v = temp(info.dtype, compute(*it->second, t, c));
  } else if (const int lane = vector_lane(t, c); lane >= 0) {
    Coords c0 = c;
    c0.back() = lanes_[0];
    const std::string vkey = t + "@f4@" + join(c0);
    std::string vec;
    for (auto s = scopes_.rbegin(); s != scopes_.rend() && vec.empty(); ++s) {
      if (auto it = s->find(vkey); it != s->end()) vec = it->second;
    }
    if (vec.empty()) {
      vec = fresh("f");
      line(fmt::format("const float4 {} = LOAD_F4({}, {});", vec, pointer(t, false),
                       linearize(info.shape, c0)));
      scopes_.back()[vkey] = vec;
    }
    v = vec + "." + "xyzw"[lane];
  } else {
    v = temp(info.dtype, fmt::format("{}[{}]", pointer(t, false), linearize(info.shape, c)));
  }
  scopes_.back()[key] = v;
  return v;
}

void KernelWriter::set_vector_lanes(const Coords& lanes) {
  if (lanes.size() != 4) throw std::logic_error("device code: vector lanes come in fours");
  lanes_ = lanes;
  vector_width_ = 4;
}

int KernelWriter::vector_lane(const std::string& t, const Coords& c) const {
  if (lanes_.empty() || c.empty()) return -1;
  const auto it = std::find(lanes_.begin(), lanes_.end(), c.back());
  if (it == lanes_.end()) return -1;
  const DeviceTensor loc = env_.locate(t);
  if (loc.dtype != DType::F32 || loc.shape.empty() || loc.shape.back() % 4 != 0 ||
      loc.offset % 16 != 0) {
    return -1;
  }
  return static_cast<int>(it - lanes_.begin());
}

bool KernelWriter::vector_friendly(const std::vector<std::string>& tensors) const {
  if (!env_.vectorize) return false;
  std::vector<std::string> todo = tensors;
  std::set<std::string> seen;
  while (!todo.empty()) {
    const std::string t = todo.back();
    todo.pop_back();
    if (t.empty() || !seen.insert(t).second || bindings_.count(t)) continue;
    const auto it = env_.inline_producers.find(t);
    if (it == env_.inline_producers.end()) continue;  // read from memory
    const Node& n = *it->second;
    // Ops whose inputs' coordinates other than the innermost one never depend on the
    // lane: pointwise ops, and layout ops that permute, drop or recompute coordinates
    // from the output's (a read whose innermost coordinate is then not a lane variable
    // falls back to scalar loads in vector_lane). Not Concat / Pad (per-lane branches),
    // Gather* (an index read at the lane decides another axis), Resize, CumSum.
    static const std::set<std::string> kLaneSafeLayout = {
        "Expand", "Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Slice"};
    const bool lane_safe = kLaneSafeLayout.count(n.op_type) != 0 ||
                           (has_elementwise_expr(n.op_type) && n.op_type != "Identity");
    if (!lane_safe) return false;
    for (const auto& in : n.inputs) todo.push_back(in);
  }
  return true;
}

void KernelWriter::store_lanes(const std::string& t, const std::vector<Coords>& lane_coords,
                               const std::vector<std::string>& values) {
  const TensorInfo& info = env_.graph->tensor(t);
  const Coords& c0 = lane_coords.front();
  if (lane_coords.size() == 4 && !lanes_.empty() && c0.size() == info.shape.size() &&
      c0.back() == lanes_[0] && vector_lane(t, c0) == 0) {
    line(fmt::format("STORE_F4({}, {}, MAKE_F4({}, {}, {}, {}));", pointer(t, true),
                     linearize(info.shape, c0), values[0], values[1], values[2], values[3]));
    return;
  }
  for (std::size_t j = 0; j < lane_coords.size(); ++j) store(t, lane_coords[j], values[j]);
}

void KernelWriter::store(const std::string& t, const Coords& coords, const std::string& v) {
  const TensorInfo& info = env_.graph->tensor(t);
  line(fmt::format("{}[{}] = {};", pointer(t, true), linearize(info.shape, coords), v));
}

std::string KernelWriter::compute(const Node& node, const std::string& t, const Coords& c) {
  const Graph& g = *env_.graph;
  if (is_search_op(node.op_type)) return search_value(*this, node, t, c);
  // The other families compute a node's first output only (a Dropout mask, say, is not).
  if (t != node.outputs[0]) {
    unsupported("{}: no device code for its output '{}'", node.describe(), t);
  }
  if (has_elementwise_expr(node.op_type) && node.op_type != "Identity") {
    std::vector<std::string> args;
    std::vector<DType> types;
    for (const auto& in : node.inputs) {
      if (in.empty()) {
        args.emplace_back();
        types.push_back(DType::F32);
        continue;
      }
      args.push_back(value(in, c));
      types.push_back(g.tensor(in).dtype);
    }
    return elementwise_expr(node, args, types, g.tensor(node.outputs[0]).dtype);
  }
  return layout_value(node, c);
}

std::string KernelWriter::layout_value(const Node& node, const Coords& c) {
  const Graph& g = *env_.graph;
  const std::string& op = node.op_type;
  const Shape& out = g.tensor(node.outputs[0]).shape;
  const std::string& x = node.inputs.at(0);
  const Shape& in = g.tensor(x).shape;
  if (op == "Transpose") {
    const auto perm = transpose_perm(node, in.size());
    Coords ci(in.size(), "0");
    for (std::size_t d = 0; d < perm.size(); ++d) ci[static_cast<std::size_t>(perm[d])] = c[d];
    return value(x, ci);
  }
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" ||
      op == "Identity") {
    if (squeezed(in) == squeezed(out)) {  // only size-1 axes come or go
      Coords nonunit;
      for (std::size_t d = 0; d < out.size(); ++d) {
        if (out[d] != 1) nonunit.push_back(c[d]);
      }
      Coords ci(in.size(), "0");
      std::size_t k = 0;
      for (std::size_t d = 0; d < in.size(); ++d) {
        if (in[d] != 1) ci[d] = nonunit[k++];
      }
      return value(x, ci);
    }
    const std::string linear = index_temp(linearize(out, c));
    return value(x, delinearize(linear, in));
  }
  if (op == "Expand") return value(x, c);
  if (op == "Slice") {
    const SlicePlan plan =
        slice_plan(node, in, constant_input(g, node, 1), constant_input(g, node, 2),
                   optional_constant(g, node, 3), optional_constant(g, node, 4));
    Coords ci(in.size());
    for (std::size_t d = 0; d < in.size(); ++d) {
      std::string e = c[d];
      if (plan.step[d] != 1) e = fmt::format("({}) * {}", e, plan.step[d]);
      if (plan.start[d] != 0) e = fmt::format("{} + {}", plan.start[d], e);
      ci[d] = index_temp(e);
    }
    return value(x, ci);
  }
  if (op == "Concat") {
    const auto axis = static_cast<std::size_t>(normalize_axis(
        node.attr_int("axis", 0), static_cast<std::int64_t>(out.size()), node.describe()));
    const DType dtype = g.tensor(node.outputs[0]).dtype;
    const std::string v = fresh("v");
    line(fmt::format("{} {};", c_type(dtype), v));
    std::int64_t begin = 0;
    std::size_t opened = 0;
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      const std::int64_t size = g.tensor(node.inputs[i]).shape[axis];
      if (size == 0) continue;
      const bool last = i + 1 == node.inputs.size();
      if (!last) {
        open(fmt::format("if ({} < {})", c[axis], begin + size));
      } else {
        open("");
      }
      Coords ci = c;
      ci[axis] = begin == 0 ? c[axis] : index_temp(fmt::format("{} - {}", c[axis], begin));
      line(fmt::format("{} = {};", v, value(node.inputs[i], ci)));
      close();
      if (!last) {
        open("else");
        ++opened;
      }
      begin += size;
    }
    for (std::size_t i = 0; i < opened; ++i) close();
    return v;
  }
  if (op == "Pad") return pad_value(node, c);
  if (op == "Gather") {
    const std::int64_t rank = static_cast<std::int64_t>(in.size());
    const auto axis =
        static_cast<std::size_t>(normalize_axis(node.attr_int("axis", 0), rank, node.describe()));
    const Shape& ishape = g.tensor(node.inputs[1]).shape;
    const Coords ic(c.begin() + static_cast<std::ptrdiff_t>(axis),
                    c.begin() + static_cast<std::ptrdiff_t>(axis + ishape.size()));
    const std::string raw = value(node.inputs[1], ic);
    const std::string idx =
        index_temp(fmt::format("({0})({1} < 0 ? {1} + {2} : {1})", index_type_, raw, in[axis]));
    Coords ci;
    for (std::size_t d = 0; d < axis; ++d) ci.push_back(c[d]);
    ci.push_back(idx);
    for (std::size_t d = axis + ishape.size(); d < c.size(); ++d) ci.push_back(c[d]);
    return value(x, ci);
  }
  if (op == "GatherElements") {
    const auto axis = static_cast<std::size_t>(normalize_axis(
        node.attr_int("axis", 0), static_cast<std::int64_t>(in.size()), node.describe()));
    const std::string raw = value(node.inputs[1], c);
    Coords ci = c;
    ci[axis] =
        index_temp(fmt::format("({0})({1} < 0 ? {1} + {2} : {1})", index_type_, raw, in[axis]));
    return value(x, ci);
  }
  if (op == "Resize") return resize_value(node, c);
  if (op == "Col2Im") return col2im_value(node, c);
  if (op == "GatherND") {
    // Output coords: batch axes, the index tuple's position, then data's trailing axes.
    const auto b = static_cast<std::size_t>(node.attr_int("batch_dims", 0));
    const Shape& ishape = g.tensor(node.inputs[1]).shape;
    const std::size_t q = ishape.size();
    const auto k = static_cast<std::size_t>(ishape.back());
    Coords ci(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(b));
    Coords ic(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(q - 1));
    ic.emplace_back();
    for (std::size_t a = 0; a < k; ++a) {
      ic.back() = std::to_string(a);
      const std::string raw = value(node.inputs[1], ic);
      ci.push_back(
          index_temp(fmt::format("({0})({1} < 0 ? {1} + {2} : {1})", index_type_, raw, in[b + a])));
    }
    for (std::size_t d = q - 1; d < c.size(); ++d) ci.push_back(c[d]);
    return value(x, ci);
  }
  if (op == "CumSum") {
    const Tensor& axis_value = constant_input(g, node, 1);
    const auto axis = static_cast<std::size_t>(normalize_axis(
        axis_value.get_as_int64(0), static_cast<std::int64_t>(in.size()), node.describe()));
    const bool exclusive = node.attr_int("exclusive", 0) != 0;
    const bool reverse = node.attr_int("reverse", 0) != 0;
    const DType dtype = g.tensor(node.outputs[0]).dtype;
    // The running sum up to (or from) this position, as a loop over the axis: one
    // element's prefix per thread, so a scan costs O(n) per element.
    const std::string at = c[axis];
    const std::string after = fmt::format("{} + 1", at);
    const std::string lo = reverse ? (exclusive ? after : at) : std::string("0");
    const std::string hi = reverse ? std::to_string(in[axis]) : (exclusive ? at : after);
    const std::string v = fresh("v");
    line(fmt::format("{} {} = {};", c_type(dtype), v, literal(0, dtype)));
    const std::string j = fresh("j");
    open(fmt::format("for ({0} {1} = {2}; {1} < {3}; ++{1})", index_type_, j, lo, hi));
    Coords ci = c;
    ci[axis] = j;
    line(fmt::format("{} += {};", v, value(x, ci)));
    close();
    return v;
  }
  unsupported("{}: no device code for op type '{}'", node.describe(), op);
}

std::string KernelWriter::pad_value(const Node& node, const Coords& c) {
  const Graph& g = *env_.graph;
  const std::string& x = node.inputs[0];
  const Shape& in = g.tensor(x).shape;
  const DType dtype = g.tensor(node.outputs[0]).dtype;
  const PadPlan plan =
      pad_plan(node, in, constant_input(g, node, 1), optional_constant(g, node, 3));
  const std::string mode = node.attr_string("mode", "constant");
  double fill = 0;
  if (node.has_input(2)) {
    const Tensor& v = constant_input(g, node, 2);
    if (v.numel() > 0) fill = v.get_as_double(0);
  }
  Coords ci(in.size());
  std::vector<std::string> checks;
  for (std::size_t d = 0; d < in.size(); ++d) {
    const std::int64_t n = in[d];
    std::string i = plan.before[d] == 0 ? c[d] : fmt::format("{} - {}", c[d], plan.before[d]);
    if (plan.before[d] == 0 && plan.after[d] <= 0) {
      ci[d] = index_temp(i);
      continue;
    }
    i = index_temp(i);
    if (mode == "constant") {
      checks.push_back(fmt::format("{0} >= 0 && {0} < {1}", i, n));
      ci[d] = i;
    } else if (mode == "edge") {
      ci[d] = index_temp(fmt::format("({0} < 0 ? 0 : ({0} >= {1} ? {1} - 1 : {0}))", i, n));
    } else if (mode == "reflect") {
      // One reflection each side (pads are smaller than the axis, as ONNX requires).
      const std::string r = index_temp(fmt::format("({0} < 0 ? -{0} : {0})", i));
      ci[d] = index_temp(fmt::format("({0} >= {1} ? 2 * ({1} - 1) - {0} : {0})", r, n));
    } else if (mode == "wrap") {
      ci[d] = index_temp(fmt::format("((({0}) % {1} + {1}) % {1})", i, n));
    } else {
      unsupported("{}: pad mode '{}' has no device code", node.describe(), mode);
    }
  }
  if (checks.empty()) return value(x, ci);
  const std::string v = fresh("v");
  line(fmt::format("{} {} = {};", c_type(dtype), v, literal(fill, dtype)));
  std::string cond;
  for (const auto& k : checks) cond += (cond.empty() ? "" : " && ") + k;
  open(fmt::format("if ({})", cond));
  line(fmt::format("{} = {};", v, value(x, ci)));
  close();
  return v;
}

// Col2Im as a gather: image element (n, ch, i...) sums, over every block offset k..., the
// block element whose position p... places it there (i = p * stride - pad + k * dilation,
// p a whole position in range), in the reference's order of block offsets.
std::string KernelWriter::col2im_value(const Node& node, const Coords& c) {
  const Graph& g = *env_.graph;
  const std::string& x = node.inputs[0];
  const DType dtype = g.tensor(node.outputs[0]).dtype;
  if (dtype != DType::F32) {
    unsupported("{}: device code computes Col2Im on float32 only", node.describe());
  }
  const Col2ImPlan p =
      col2im_plan(node, g.tensor(x).shape, constant_input(g, node, 1), constant_input(g, node, 2));
  const std::size_t dims = p.image.size();
  const std::string v = fresh("v");
  line(fmt::format("{} {} = {};", c_type(dtype), v, literal(0, dtype)));
  std::string row = c[1], position = "0";
  for (std::size_t d = 0; d < dims; ++d) {
    const std::string k = fresh("k");
    open(fmt::format("for ({0} {1} = 0; {1} < {2}; ++{1})", index_type_, k, p.block[d]));
    const std::string t =
        index_temp(fmt::format("{} + {} - {} * {}", c[2 + d], p.pads_begin[d], k, p.dilations[d]));
    std::string cond = fmt::format("{} >= 0", t);
    std::string pos = t;
    if (p.strides[d] != 1) {
      cond += fmt::format(" && {} % {} == 0", t, p.strides[d]);
      pos = fmt::format("{} / {}", t, p.strides[d]);
    }
    cond += fmt::format(" && {} < {}", pos, p.positions[d]);
    open(fmt::format("if ({})", cond));
    row = index_temp(fmt::format("({}) * {} + {}", row, p.block[d], k));
    position = index_temp(fmt::format("({}) * {} + {}", position, p.positions[d], pos));
  }
  line(fmt::format("{} += {};", v, value(x, {c[0], row, position})));
  for (std::size_t d = 0; d < 2 * dims; ++d) close();
  return v;
}

std::string KernelWriter::resize_value(const Node& node, const Coords& c) {
  const Graph& g = *env_.graph;
  const std::string& x = node.inputs[0];
  const Shape& in = g.tensor(x).shape;
  const Shape& out = g.tensor(node.outputs[0]).shape;
  const ResizePlan plan =
      resize_plan(node, in, optional_constant(g, node, 2), optional_constant(g, node, 3));
  const std::string ctm = node.attr_string("coordinate_transformation_mode", "half_pixel");
  const std::string mode = node.attr_string("mode", "nearest");
  const bool antialias = node.attr_int("antialias", 0) != 0;
  // Per resized axis, the taps of every output position as two tables (source index,
  // weight), computed here with the reference kernel's own sampling functions.
  struct AxisTaps {
    std::size_t axis;
    std::int64_t taps;
    std::string index_table, weight_table;
  };
  std::vector<AxisTaps> axes;
  Coords ci = c;
  for (std::size_t d = 0; d < in.size(); ++d) {
    if (in[d] == out[d] && plan.scales[d] == 1.0) continue;
    std::vector<std::pair<std::int64_t, double>> all;
    std::int64_t taps = 1;
    for (std::int64_t o = 0; o < out[d]; ++o) {
      const double src = resize_source(ctm, o, plan.scales[d], in[d], out[d]);
      if (mode == "nearest") {
        all.emplace_back(resize_nearest_index(
                             src, node.attr_string("nearest_mode", "round_prefer_floor"), in[d]),
                         1.0);
      } else if (antialias && plan.scales[d] < 1.0 && (mode == "linear" || mode == "cubic")) {
        // The filter stretched by 1 / scale: a fixed number of taps per axis.
        const auto t = resize_antialias_taps(src, in[d], plan.scales[d], mode == "cubic",
                                             node.attr_float("cubic_coeff_a", -0.75f),
                                             node.attr_int("exclude_outside", 0) != 0);
        taps = static_cast<std::int64_t>(t.size());
        all.insert(all.end(), t.begin(), t.end());
      } else if (mode == "linear") {
        taps = 2;
        const double fl = std::floor(src);
        const double r = src - fl;
        const auto base = static_cast<std::int64_t>(fl);
        all.emplace_back(std::clamp<std::int64_t>(base, 0, in[d] - 1), 1.0 - r);
        all.emplace_back(std::clamp<std::int64_t>(base + 1, 0, in[d] - 1), r);
      } else if (mode == "cubic") {
        taps = 4;
        for (const auto& t : resize_cubic_taps(src, in[d], node.attr_float("cubic_coeff_a", -0.75f),
                                               node.attr_int("exclude_outside", 0) != 0)) {
          all.push_back(t);
        }
      } else {
        unsupported("{}: Resize mode '{}' has no device code", node.describe(), mode);
      }
    }
    std::vector<std::int32_t> index;
    std::vector<float> weight;
    for (const auto& [i, w] : all) {
      index.push_back(static_cast<std::int32_t>(i));
      weight.push_back(static_cast<float>(w));
    }
    const auto n = static_cast<std::int64_t>(all.size());
    const std::string key = fmt::format("{}#axis{}", node.outputs[0], d);
    AxisTaps a{d, taps,
               table_pointer(key + "#index", std::make_shared<Tensor>(
                                                 Tensor::from_vector<std::int32_t>({n}, index))),
               ""};
    if (taps > 1) {
      a.weight_table = table_pointer(
          key + "#weight", std::make_shared<Tensor>(Tensor::from_vector<float>({n}, weight)));
    }
    axes.push_back(a);
  }
  if (axes.empty()) return value(x, c);
  // Every combination of the axes' taps.
  const DType dtype = g.tensor(node.outputs[0]).dtype;
  std::int64_t combos = 1;
  for (const auto& a : axes) combos *= a.taps;
  if (combos > 16) {
    // Wide (antialiased) filters: one loop per axis over its taps instead of every
    // combination written out.
    const std::string acc = fresh("acc");
    line(fmt::format("{} {} = {};", c_type(dtype), acc, literal(0, dtype)));
    std::string w;
    for (const auto& a : axes) {
      const std::string t = fresh("t");
      open(fmt::format("for ({0} {1} = 0; {1} < {2}; ++{1})", index_type_, t, a.taps));
      const std::string at = index_temp(fmt::format("({}) * {} + {}", c[a.axis], a.taps, t));
      ci[a.axis] = index_temp(fmt::format("{}[{}]", a.index_table, at));
      if (a.taps > 1) w += (w.empty() ? "" : " * ") + fmt::format("{}[{}]", a.weight_table, at);
    }
    const std::string v = value(x, ci);
    line(fmt::format("{} += {};", acc, w.empty() ? v : fmt::format("{} * {}", w, v)));
    for (std::size_t i = 0; i < axes.size(); ++i) close();
    return acc;
  }
  std::string sum;
  for (std::int64_t k = 0; k < combos; ++k) {
    std::int64_t rest = k;
    std::string w;
    for (const auto& a : axes) {
      const std::int64_t t = rest % a.taps;
      rest /= a.taps;
      const std::string at =
          a.taps == 1 ? c[a.axis] : fmt::format("({}) * {} + {}", c[a.axis], a.taps, t);
      ci[a.axis] = index_temp(fmt::format("{}[{}]", a.index_table, at));
      if (a.taps > 1) w += (w.empty() ? "" : " * ") + fmt::format("{}[{}]", a.weight_table, at);
    }
    const std::string v = value(x, ci);
    sum += (sum.empty() ? "" : " + ") + (w.empty() ? v : fmt::format("{} * {}", w, v));
  }
  if (dtype != DType::F32) return sum;  // nearest on integers: one tap
  return sum;
}

std::string KernelWriter::finish(const std::string& name, const std::string& shared_decls) const {
  std::string out = fmt::format(
      "\nKERNEL void {}(GLOBAL uchar* arena, GLOBAL const uchar* weights, GLOBAL uchar* scratch, "
      "GLOBAL const uchar* inputs) {{\n",
      name);
  out += shared_decls;
  out += decls_.str();
  out += body_.str();
  out += "}\n";
  return out;
}

}  // namespace orchid::codegen
