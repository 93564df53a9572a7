#include "ir/graph_stats.hpp"

#include <unordered_set>

namespace orchid {

namespace {

std::int64_t numel_of(const Graph& g, const std::string& name) {
  if (name.empty() || !g.has_tensor(name)) return 0;
  const TensorInfo& info = g.tensor(name);
  return info.has_type ? shape_numel(info.shape) : 0;
}

const Shape* shape_of(const Graph& g, const std::string& name) {
  if (name.empty() || !g.has_tensor(name) || !g.tensor(name).has_type) return nullptr;
  return &g.tensor(name).shape;
}

}  // namespace

std::int64_t node_flops(const Graph& g, const Node& node) {
  if (node.op_type == "QLinearConv" || node.op_type == "QLinearMatMul") {
    // The integer multiply-adds of the float op on the same operands (x, w), no bias.
    Node as_float;
    as_float.op_type = node.op_type == "QLinearConv" ? "Conv" : "MatMul";
    as_float.inputs = {node.inputs[0], node.inputs.size() > 3 ? node.inputs[3] : ""};
    as_float.outputs = node.outputs;
    as_float.attributes = node.attributes;
    return node_flops(g, as_float);
  }
  const std::string& op = node.op_type;
  const std::int64_t out = node.outputs.empty() ? 0 : numel_of(g, node.outputs[0]);
  const std::int64_t in = node.inputs.empty() ? 0 : numel_of(g, node.inputs[0]);
  if (op == "Conv") {
    // each output element: Cin/group * prod(kernel) multiply-adds
    const Shape* w = node.inputs.size() > 1 ? shape_of(g, node.inputs[1]) : nullptr;
    if (!w) return 0;
    std::int64_t per_output = 1;
    for (std::size_t i = 1; i < w->size(); ++i) per_output *= (*w)[i];
    return 2 * out * per_output + (node.has_input(2) ? out : 0);
  }
  if (op == "ConvTranspose") {
    // each input element scatters into Cout/group * prod(kernel) outputs
    const Shape* w = node.inputs.size() > 1 ? shape_of(g, node.inputs[1]) : nullptr;
    if (!w) return 0;
    std::int64_t per_input = 1;
    for (std::size_t i = 1; i < w->size(); ++i) per_input *= (*w)[i];
    return 2 * in * per_input + (node.has_input(2) ? out : 0);
  }
  if (op == "MatMul" || op == "Gemm") {
    const Shape* a = shape_of(g, node.inputs[0]);
    if (!a || a->empty()) return 0;
    std::int64_t k = a->back();
    if (op == "Gemm" && node.attr_int("transA", 0) != 0) k = (*a)[0];
    return 2 * out * k + (op == "Gemm" && node.has_input(2) ? out : 0);
  }
  if (op == "MaxPool" || op == "AveragePool") {
    std::int64_t window = 1;
    for (auto k : node.attr_ints("kernel_shape", {})) window *= k;
    return out * window;
  }
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool" || op.rfind("Reduce", 0) == 0 ||
      op == "ArgMax" || op == "ArgMin") {
    return in;
  }
  if (op == "Softmax" || op == "LogSoftmax") return 5 * in;  // max, sub, exp, sum, div
  if (op == "BatchNormalization") return 2 * out;            // folded scale and shift
  if (op == "InstanceNormalization" || op == "LayerNormalization") return 8 * out;
  if (op == "Resize") return 4 * out;
  if (op == "Col2Im") return in;  // one addition per block element
  static const std::unordered_set<std::string> kFree = {
      "Reshape", "Flatten", "Squeeze",         "Unsqueeze", "Transpose", "Concat",  "Split",
      "Slice",   "Gather",  "Expand",          "Tile",      "Identity",  "Dropout", "Shape",
      "Size",    "Cast",    "ConstantOfShape", "Range",     "Pad"};
  if (kFree.count(op)) return 0;
  return out;  // elementwise
}

GraphStats compute_graph_stats(const Graph& g) {
  GraphStats stats;
  stats.nodes = g.nodes.size();
  std::unordered_set<std::string> names(g.inputs.begin(), g.inputs.end());
  for (const Node& node : g.nodes) {
    ++stats.op_histogram[node.op_type];
    stats.flops += node_flops(g, node);
    for (const auto& t : node.inputs) {
      if (!t.empty()) names.insert(t);
    }
    for (const auto& t : node.outputs) {
      if (!t.empty()) names.insert(t);
    }
  }
  stats.tensors = names.size();
  for (const auto& w : g.weights()) {
    const Tensor& t = *g.tensor(w).data;
    if (is_float(t.dtype())) stats.parameters += t.numel();  // not shape plumbing
    stats.parameter_bytes += static_cast<std::int64_t>(t.nbytes());
  }
  return stats;
}

}  // namespace orchid
