#include "runtime/reference_interpreter.hpp"

#include <unordered_map>

#include "runtime/reference/reference_kernels.hpp"
#include "util/error.hpp"

namespace orchid {

std::vector<Tensor> run_reference_node(const Graph& graph, const Node& node,
                                       std::span<const Tensor* const> inputs) {
  ReferenceKernel kernel = find_reference_kernel(node.op_type);
  if (!kernel) {
    unsupported("{}: unsupported: no reference kernel for op type '{}'", node.describe(),
                node.op_type);
  }
  std::vector<Tensor> outputs;
  outputs.reserve(node.outputs.size());
  for (const auto& name : node.outputs) {
    if (name.empty()) {
      outputs.emplace_back();
      continue;
    }
    const TensorInfo& info = graph.tensor(name);
    if (!info.has_type) fail("{}: output '{}' has no inferred type", node.describe(), name);
    outputs.emplace_back(info.dtype, info.shape);
  }
  kernel(node, inputs, outputs);
  return outputs;
}

ReferenceInterpreter::ReferenceInterpreter(const Graph& graph)
    : graph_(graph), order_(graph.topological_order()) {}

TensorMap ReferenceInterpreter::run(const TensorMap& inputs) const {
  std::unordered_map<std::string, Tensor> values;
  for (const auto& name : graph_.inputs) {
    auto it = inputs.find(name);
    if (it == inputs.end()) fail("missing value for graph input '{}'", name);
    const TensorInfo& info = graph_.tensor(name);
    if (it->second.dtype() != info.dtype || it->second.shape() != info.shape) {
      fail("graph input '{}' expects {} {} but got {} {}", name, dtype_name(info.dtype),
           shape_to_string(info.shape), dtype_name(it->second.dtype()),
           shape_to_string(it->second.shape()));
    }
    values.emplace(name, it->second);
  }

  // Last node position that reads each tensor, so intermediates can be dropped early.
  std::unordered_map<std::string, std::size_t> last_use;
  for (std::size_t pos = 0; pos < order_.size(); ++pos) {
    for (const auto& in : graph_.nodes[order_[pos]].inputs) last_use[in] = pos;
  }
  for (const auto& out : graph_.outputs) last_use[out] = order_.size();

  auto lookup = [&](const std::string& name) -> const Tensor* {
    if (name.empty()) return nullptr;
    auto it = values.find(name);
    if (it != values.end()) return &it->second;
    const TensorInfo& info = graph_.tensor(name);
    if (info.data) return info.data.get();
    fail("tensor '{}' has no value when it is needed", name);
  };

  for (std::size_t pos = 0; pos < order_.size(); ++pos) {
    const Node& node = graph_.nodes[order_[pos]];
    std::vector<const Tensor*> args;
    args.reserve(node.inputs.size());
    for (const auto& in : node.inputs) args.push_back(lookup(in));
    std::vector<Tensor> results = run_reference_node(graph_, node, args);
    for (std::size_t i = 0; i < node.outputs.size(); ++i) {
      if (!node.outputs[i].empty()) values[node.outputs[i]] = std::move(results[i]);
    }
    for (const auto& in : node.inputs) {
      auto it = last_use.find(in);
      if (it != last_use.end() && it->second == pos) values.erase(in);
    }
  }

  TensorMap outputs;
  for (const auto& name : graph_.outputs) {
    const Tensor* t = lookup(name);
    outputs.emplace(name, *t);
  }
  return outputs;
}

}  // namespace orchid
