#include <fmt/format.h>

#include <algorithm>

#include "eval/reference_interpreter.hpp"
#include "fission/primitive.hpp"
#include "fission/rule.hpp"
#include "onnx/tensor_proto.hpp"
#include "util/error.hpp"

namespace orchid::fission_detail {

namespace {

// Folding bigger results than this (and than their inputs) would bloat the graph's weights
// for little gain.
constexpr std::int64_t kMaxFoldedElements = std::int64_t{1} << 24;

bool is_graph_output(const Graph& g, const std::string& t) {
  return std::find(g.outputs.begin(), g.outputs.end(), t) != g.outputs.end();
}

}  // namespace

const Shape& RuleContext::shape(const std::string& tensor) const {
  return state_.result.graph.tensor(tensor).shape;
}

DType RuleContext::dtype(const std::string& tensor) const {
  return state_.result.graph.tensor(tensor).dtype;
}

const Tensor* RuleContext::constant_value(const std::string& tensor) const {
  const TensorInfo& info = state_.result.graph.tensor(tensor);
  return info.data.get();
}

const Shape& RuleContext::model_shape(const std::string& tensor) const {
  return state_.model.tensor(tensor).shape;
}

std::string RuleContext::fresh_tensor(const std::string& what) {
  const std::string base = node_.name + "/fission/" + what;
  std::string name = base;
  const Graph& g = state_.result.graph;
  for (int k = 1; g.has_tensor(name) || state_.model.has_tensor(name); ++k) {
    name = fmt::format("{}_{}", base, k);
  }
  return name;
}

std::string RuleContext::fresh_node(const std::string& what) {
  if (what.empty() && !own_name_used_) {
    own_name_used_ = true;
    return node_.name;
  }
  const std::string base = what.empty() ? node_.name : node_.name + "/fission/" + what;
  std::string name = base;
  for (int k = 1; state_.node_names.count(name) != 0; ++k) name = fmt::format("{}_{}", base, k);
  state_.node_names.insert(name);
  return name;
}

std::string RuleContext::emit(const std::string& op, std::vector<std::string> inputs,
                              std::map<std::string, Attribute> attributes, const std::string& what,
                              const std::string& out) {
  Node node;
  node.op_type = op;
  node.inputs = std::move(inputs);
  node.attributes = std::move(attributes);
  node.outputs = {out.empty() ? fresh_tensor(what) : out};
  node.name = fresh_node(what);
  return append(std::move(node));
}

std::string RuleContext::append(Node node) {
  Graph& g = state_.result.graph;
  if (!is_primitive(node)) {
    fail("fission of {} produced {}, which is not a primitive", node_.describe(), node.describe());
  }
  infer_node_types(g, node);
  const std::string y = node.outputs[0];

  // Folded when every input is constant and the result is small, or LargeFolds admits it.
  bool foldable = !is_graph_output(g, y);
  std::int64_t largest_input = 0;
  std::vector<const Tensor*> values;
  for (const auto& in : node.inputs) {
    const Tensor* v = in.empty() ? nullptr : g.tensor(in).data.get();
    foldable = foldable && (in.empty() || v != nullptr);
    if (v) largest_input = std::max(largest_input, v->numel());
    values.push_back(v);
  }
  const std::int64_t elements = shape_numel(g.tensor(y).shape);
  if (foldable && elements > kMaxFoldedElements) {
    if (!state_.large_folds) state_.large_folds.emplace(state_.model);
    const std::int64_t bytes = elements * static_cast<std::int64_t>(dtype_size(g.tensor(y).dtype));
    foldable = state_.large_folds->admit(elements, bytes, largest_input);
  }
  if (foldable) {
    state_.node_names.erase(node.name);
    std::vector<Tensor> result = run_reference_node(g, node, values);
    g.set_constant(y, std::move(result.at(0)));
    return y;
  }
  state_.result.origin[node.name] = node_.name;
  g.nodes.push_back(std::move(node));
  return y;
}

void RuleContext::pass_through() {
  Node node = node_;
  // Trailing absent outputs carry no meaning; a primitive has exactly one output.
  while (node.outputs.size() > 1 && node.outputs.back().empty()) node.outputs.pop_back();
  if (!is_primitive(node)) {
    fail("{} has no fission rule and is not a primitive in this form", node_.describe());
  }
  node.name = fresh_node("");
  append(std::move(node));
}

void RuleContext::alias(const std::string& out, const std::string& in) {
  emit("Identity", {in}, {}, "identity", out);
}

std::string RuleContext::constant(const std::string& what, Tensor value) {
  const std::string name = fresh_tensor(what);
  state_.result.graph.set_constant(name, std::move(value));
  return name;
}

std::string RuleContext::scalar(const std::string& what, double value, DType dtype) {
  return constant(what, Tensor::from_vector<double>({}, {value}).cast(dtype));
}

std::string RuleContext::int64s(const std::string& what, const std::vector<std::int64_t>& values) {
  return constant(what, Tensor::from_int64s(values));
}

std::string RuleContext::reshape(const std::string& x, const Shape& target, const std::string& what,
                                 const std::string& out) {
  if (shape(x) == target) {
    if (out.empty()) return x;
    alias(out, x);
    return out;
  }
  return emit("Reshape", {x, int64s(what + "_shape", target)}, {}, what, out);
}

std::string RuleContext::reduce(const std::string& op, const std::string& x,
                                const std::vector<std::int64_t>& axes, bool keepdims,
                                const std::string& what, const std::string& out) {
  if (axes.empty()) {  // reducing nothing is the identity
    if (out.empty()) return x;
    alias(out, x);
    return out;
  }
  std::vector<std::int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  std::map<std::string, Attribute> attributes{{"keepdims", std::int64_t{keepdims ? 1 : 0}}};
  // Opset 13+ ReduceSum takes its axes as an input; the other reductions (opset 17) as
  // an attribute.
  if (op == "ReduceSum") {
    return emit(op, {x, int64s(what + "_axes", sorted)}, std::move(attributes), what, out);
  }
  attributes["axes"] = sorted;
  return emit(op, {x}, std::move(attributes), what, out);
}

std::string RuleContext::transpose(const std::string& x, const std::vector<std::int64_t>& perm,
                                   const std::string& what, const std::string& out) {
  bool trivial = true;
  for (std::size_t i = 0; i < perm.size(); ++i) trivial = trivial && perm[i] == std::int64_t(i);
  if (trivial) {
    if (out.empty()) return x;
    alias(out, x);
    return out;
  }
  return emit("Transpose", {x}, {{"perm", perm}}, what, out);
}

std::string RuleContext::slice(const std::string& x, const std::vector<std::int64_t>& starts,
                               const std::vector<std::int64_t>& ends,
                               const std::vector<std::int64_t>& axes, const std::string& what,
                               const std::string& out) {
  return emit("Slice",
              {x, int64s(what + "_starts", starts), int64s(what + "_ends", ends),
               int64s(what + "_axes", axes)},
              {}, what, out);
}

std::string RuleContext::cast(const std::string& x, DType to, const std::string& what,
                              const std::string& out) {
  return emit("Cast", {x}, {{"to", std::int64_t{dtype_to_onnx(to)}}}, what, out);
}

std::string RuleContext::channel_vector(const std::string& v, std::int64_t data_rank,
                                        const std::string& what) {
  Shape target(static_cast<std::size_t>(std::max<std::int64_t>(data_rank - 1, 1)), 1);
  target[0] = shape(v).at(0);
  return reshape(v, target, what);
}

std::vector<std::int64_t> RuleContext::axes_from(std::int64_t first, std::int64_t rank) {
  std::vector<std::int64_t> axes;
  for (std::int64_t a = first; a < rank; ++a) axes.push_back(a);
  return axes;
}

std::vector<std::int64_t> RuleContext::axes_from_axis_attribute(const std::string& x) const {
  const std::int64_t rank = this->rank(x);
  return axes_from(normalize_axis(node_.attr_int("axis", -1), rank, node_.describe()), rank);
}

RuleContext::Standardized RuleContext::standardize(const std::string& x,
                                                   const std::vector<std::int64_t>& axes,
                                                   DType dtype) {
  const std::string mean = reduce("ReduceMean", x, axes, true, "mean");
  const std::string d = emit("Sub", {x, mean}, {}, "sub");
  const std::string d2 = emit("Mul", {d, d}, {}, "square");
  const std::string var = reduce("ReduceMean", d2, axes, true, "var");
  const std::string eps = scalar("epsilon", node_.attr_float("epsilon", 1e-5F), dtype);
  const std::string ve = emit("Add", {var, eps}, {}, "add_eps");
  const std::string sd = emit("Sqrt", {ve}, {}, "std");
  return {mean, sd, emit("Div", {d, sd}, {}, "normalize")};
}

void RuleContext::unsupported(const std::string& why) const {
  throw UnsupportedError(fmt::format("fission of {}: unsupported: {}", node_.describe(), why));
}

}  // namespace orchid::fission_detail
