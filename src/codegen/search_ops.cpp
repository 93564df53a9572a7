#include "codegen/search_ops.hpp"

#include <fmt/format.h>

#include "util/error.hpp"

namespace orchid::codegen {

namespace {

std::size_t axis_of(const Node& n, std::int64_t fallback, std::size_t rank) {
  return static_cast<std::size_t>(
      normalize_axis(n.attr_int("axis", fallback), static_cast<std::int64_t>(rank), n.describe()));
}

// An index read from a tensor, wrapped once as the reference does for negative values.
std::string wrapped(const std::string& raw, std::int64_t dim) {
  return fmt::format("({0} < 0 ? {0} + {1} : {0})", raw, dim);
}

// TopK: the element of rank c[axis] in the reference's order (stable sort: NaN ranks
// above every number, equal values by lower index; largest=0 reverses the values'
// comparison only). Found by c[axis] + 1 passes, each picking the best element ranked
// after the previous pick; both outputs come from the same search.
std::string topk_value(KernelWriter& w, const Node& n, const std::string& t, const Coords& c) {
  const Graph& g = w.graph();
  const std::string& x = n.inputs[0];
  const Shape& in = g.tensor(x).shape;
  const std::size_t axis = axis_of(n, -1, in.size());
  const bool largest = n.attr_int("largest", 1) != 0;
  const DType dtype = g.tensor(x).dtype;
  const bool floating = dtype == DType::F32 || dtype == DType::F64;
  if (!floating && dtype != DType::I64 && dtype != DType::I32) {
    unsupported("{}: TopK of {} has no device code", n.describe(), dtype_name(dtype));
  }
  const std::string T = KernelWriter::c_type(dtype);
  const std::string& I = w.index_type();
  auto above = [&](const std::string& a, const std::string& b) {
    if (!floating) return fmt::format("({} > {})", a, b);
    return fmt::format("({0} != {0} ? {1} == {1} : ({1} == {1} && {0} > {1}))", a, b);
  };
  // Whether (va, ia) comes before (vb, ib) in TopK's output order.
  auto before = [&](const std::string& va, const std::string& ia, const std::string& vb,
                    const std::string& ib) {
    const std::string first = largest ? above(va, vb) : above(vb, va);
    const std::string second = largest ? above(vb, va) : above(va, vb);
    return fmt::format("({} || (!{} && {} < {}))", first, second, ia, ib);
  };
  const std::string pv = w.fresh("pv"), pi = w.fresh("pi");
  w.line(fmt::format("{} {} = {};", T, pv, literal(0, dtype)));
  w.line(fmt::format("i64 {} = -1;", pi));
  const std::string p = w.fresh("p");
  w.open(fmt::format("for ({0} {1} = 0; {1} <= {2}; ++{1})", I, p, c[axis]));
  const std::string bv = w.fresh("bv"), bi = w.fresh("bi");
  w.line(fmt::format("{} {} = {};", T, bv, literal(0, dtype)));
  w.line(fmt::format("i64 {} = -1;", bi));
  const std::string j = w.fresh("j");
  w.open(fmt::format("for (i64 {0} = 0; {0} < {1}; ++{0})", j, in[axis]));
  Coords ci = c;
  ci[axis] = j;
  const std::string v = w.value(x, ci);
  w.open(fmt::format("if (({} < 0 || {}) && ({} < 0 || {}))", pi, before(pv, pi, v, j), bi,
                     before(v, j, bv, bi)));
  w.line(fmt::format("{} = {};", bv, v));
  w.line(fmt::format("{} = {};", bi, j));
  w.close();
  w.close();
  w.line(fmt::format("{} = {};", pv, bv));
  w.line(fmt::format("{} = {};", pi, bi));
  w.close();
  // The other output at these coordinates is the same search's other half.
  const std::string& values = n.outputs[0];
  const std::string indices = n.outputs.size() > 1 ? n.outputs[1] : std::string();
  if (t == values && !indices.empty()) w.remember(indices, c, pi);
  if (t == indices && !values.empty()) w.remember(values, c, pv);
  return t == values ? pv : pi;
}

// The inputs of ScatterND / ScatterElements, and the element's variable: data at c.
struct Scatter {
  const std::string& indices;
  const std::string& updates;
  const Shape& data_shape;
  const Shape& index_shape;
  const DType dtype;
  const std::string reduction;
  std::string v;

  Scatter(KernelWriter& w, const Node& n, const Coords& c)
      : indices(n.inputs.at(1)),
        updates(n.inputs.at(2)),
        data_shape(w.graph().tensor(n.inputs[0]).shape),
        index_shape(w.graph().tensor(indices).shape),
        dtype(w.graph().tensor(n.inputs[0]).dtype),
        reduction(n.attr_string("reduction", "none")),
        v(w.fresh("v")) {
    w.line(fmt::format("{} {} = {};", KernelWriter::c_type(dtype), v, w.value(n.inputs[0], c)));
  }
};

// ScatterElements: data at c, then every update along the axis whose index addresses c,
// in indices order (replaced, added or multiplied; integers wrap as in the reference).
std::string scatter_elements_value(KernelWriter& w, const Node& n, const Coords& c) {
  const Scatter s(w, n, c);
  const std::size_t axis = axis_of(n, 0, s.data_shape.size());
  std::string combine;  // over {0} (current) and {1} (update)
  if (s.reduction == "none") {
    combine = "{1}";
  } else if (s.reduction == "add" || s.reduction == "mul") {
    const char* op = s.reduction == "add" ? "+" : "*";
    if (s.dtype == DType::I64 || s.dtype == DType::I32) {
      const char* u = s.dtype == DType::I64 ? "u64" : "u32";
      combine =
          fmt::format("({0})(({1})({{0}}) {2} ({1})({{1}}))", KernelWriter::c_type(s.dtype), u, op);
    } else {
      combine = fmt::format("{{0}} {} {{1}}", op);
    }
  } else {
    unsupported("{}: ScatterElements reduction '{}' has no device code", n.describe(), s.reduction);
  }
  // Only updates whose other coordinates equal c's reach this element.
  std::string inside;
  for (std::size_t d = 0; d < s.data_shape.size(); ++d) {
    if (d != axis && s.index_shape[d] < s.data_shape[d]) {
      inside += fmt::format("{}{} < {}", inside.empty() ? "" : " && ", c[d], s.index_shape[d]);
    }
  }
  w.open(inside.empty() ? std::string() : fmt::format("if ({})", inside));
  const std::string j = w.fresh("j");
  w.open(
      fmt::format("for ({0} {1} = 0; {1} < {2}; ++{1})", w.index_type(), j, s.index_shape[axis]));
  Coords ci = c;
  ci[axis] = j;
  const std::string raw = w.value(s.indices, ci);
  w.open(fmt::format("if ({} == {})", wrapped(raw, s.data_shape[axis]), c[axis]));
  w.line(fmt::format("{} = {};", s.v,
                     fmt::format(fmt::runtime(combine), s.v, w.value(s.updates, ci))));
  w.close();
  w.close();
  w.close();
  return s.v;
}

// ScatterND (reduction none): data at c, replaced by the slice of the last index tuple
// that addresses c's leading coordinates.
std::string scatter_nd_value(KernelWriter& w, const Node& n, const Coords& c) {
  if (const std::string r = n.attr_string("reduction", "none"); r != "none") {
    unsupported("{}: ScatterND reduction '{}' has no device code", n.describe(), r);
  }
  const Scatter s(w, n, c);
  const auto k = static_cast<std::size_t>(s.index_shape.back());
  const Shape tuples(s.index_shape.begin(), s.index_shape.end() - 1);
  const std::string i = w.fresh("t");
  w.open(
      fmt::format("for ({0} {1} = 0; {1} < {2}; ++{1})", w.index_type(), i, shape_numel(tuples)));
  Coords ic = w.delinearize(i, tuples);
  Coords uc = ic;
  ic.emplace_back();
  std::string match;
  for (std::size_t a = 0; a < k; ++a) {
    ic.back() = std::to_string(a);
    match += fmt::format("{}{} == {}", match.empty() ? "" : " && ",
                         wrapped(w.value(s.indices, ic), s.data_shape[a]), c[a]);
  }
  uc.insert(uc.end(), c.begin() + static_cast<std::ptrdiff_t>(k), c.end());
  w.open(fmt::format("if ({})", match));
  w.line(fmt::format("{} = {};", s.v, w.value(s.updates, uc)));
  w.close();
  w.close();
  return s.v;
}

}  // namespace

bool is_search_op(const std::string& op_type) {
  return op_type == "TopK" || op_type == "ScatterND" || op_type == "ScatterElements";
}

std::string search_value(KernelWriter& w, const Node& node, const std::string& t, const Coords& c) {
  if (node.op_type == "TopK") return topk_value(w, node, t, c);
  if (node.op_type == "ScatterElements") return scatter_elements_value(w, node, c);
  return scatter_nd_value(w, node, c);
}

}  // namespace orchid::codegen
