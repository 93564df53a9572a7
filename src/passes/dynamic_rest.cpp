#include "passes/dynamic_rest.hpp"

#include <algorithm>
#include <unordered_set>

namespace orchid {

Graph dynamic_rest(const Graph& graph, const Graph& part) {
  std::unordered_set<std::string> computed;  // by the static part
  for (const Node& n : part.nodes) {
    for (const auto& out : n.outputs) computed.insert(out);
  }
  Graph rest = graph;
  rest.name = graph.name + " (after the static part)";
  rest.nodes.clear();
  for (const Node& n : graph.nodes) {
    const bool in_part = std::any_of(n.outputs.begin(), n.outputs.end(),
                                     [&](const std::string& o) { return computed.count(o) != 0; });
    if (!in_part) rest.nodes.push_back(n);
  }
  std::unordered_set<std::string> read(graph.outputs.begin(), graph.outputs.end());
  for (const Node& n : rest.nodes) read.insert(n.inputs.begin(), n.inputs.end());
  rest.inputs.clear();
  for (const auto& in : graph.inputs) {
    if (read.count(in)) rest.inputs.push_back(in);
  }
  for (const auto& out : part.outputs) {
    if (std::find(rest.inputs.begin(), rest.inputs.end(), out) == rest.inputs.end()) {
      rest.inputs.push_back(out);
    }
  }
  rest.remove_dead_nodes();
  rest.validate();
  return rest;
}

}  // namespace orchid
