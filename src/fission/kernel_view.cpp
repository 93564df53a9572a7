#include "fission/kernel_view.hpp"

#include <algorithm>
#include <set>
#include <unordered_set>

namespace orchid {

KernelView make_kernel_view(const Graph& graph, std::vector<std::size_t> nodes) {
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  KernelView view;
  view.graph = &graph;
  view.nodes = nodes;
  const std::unordered_set<std::size_t> members(nodes.begin(), nodes.end());
  std::unordered_set<std::string> produced;
  for (std::size_t i : nodes) {
    for (const auto& t : graph.nodes[i].outputs) {
      if (!t.empty()) produced.insert(t);
    }
  }
  std::set<std::string> seen_inputs;
  for (std::size_t i : nodes) {
    for (const auto& t : graph.nodes[i].inputs) {
      if (t.empty() || produced.count(t) || !seen_inputs.insert(t).second) continue;
      view.inputs.push_back(t);
    }
  }
  std::unordered_set<std::string> graph_outputs(graph.outputs.begin(), graph.outputs.end());
  std::unordered_set<std::string> read_outside;
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    if (members.count(i)) continue;
    for (const auto& t : graph.nodes[i].inputs) {
      if (produced.count(t)) read_outside.insert(t);
    }
  }
  for (std::size_t i : nodes) {
    for (const auto& t : graph.nodes[i].outputs) {
      if (!t.empty() && (read_outside.count(t) || graph_outputs.count(t))) {
        view.outputs.push_back(t);
      }
    }
  }
  return view;
}

std::int64_t tensor_bytes(const Graph& graph, const std::string& name) {
  const TensorInfo& info = graph.tensor(name);
  return shape_numel(info.shape) * static_cast<std::int64_t>(dtype_size(info.dtype));
}

}  // namespace orchid
