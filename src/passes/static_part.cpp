#include "passes/static_part.hpp"

#include <algorithm>
#include <unordered_set>

#include "util/error.hpp"

namespace orchid {

Graph static_part(const Graph& graph) {
  const Node* first_dynamic = graph.first_dynamic_node();
  if (!first_dynamic) return graph;
  std::unordered_set<std::string> available(graph.inputs.begin(), graph.inputs.end());
  std::vector<bool> kept(graph.nodes.size(), false);
  const auto order = graph.topological_order();
  for (std::size_t i : order) {
    const Node& node = graph.nodes[i];
    bool ok = !graph.is_dynamic_node(node);
    for (const auto& out : node.outputs) ok = ok && (out.empty() || graph.tensor(out).has_type);
    for (const auto& in : node.inputs) {
      ok = ok && (in.empty() || graph.is_constant(in) || available.count(in) != 0);
    }
    if (!ok) continue;
    kept[i] = true;
    for (const auto& out : node.outputs) {
      if (!out.empty()) available.insert(out);
    }
  }
  // Outputs: what the dropped nodes read from the kept ones, and static graph outputs.
  std::vector<std::string> outputs;
  std::unordered_set<std::string> listed;
  auto add_output = [&](const std::string& name) {
    if (!name.empty() && available.count(name) && !graph.is_constant(name) &&
        listed.insert(name).second) {
      outputs.push_back(name);
    }
  };
  for (std::size_t i : order) {
    if (kept[i]) continue;
    for (const auto& in : graph.nodes[i].inputs) add_output(in);
  }
  for (const auto& out : graph.outputs) add_output(out);
  Graph part = graph;
  part.name = graph.name + " (static part)";
  part.nodes.clear();
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    if (kept[i]) part.nodes.push_back(graph.nodes[i]);
  }
  part.outputs.clear();
  for (const auto& out : outputs) {
    // Graph inputs read straight by the dynamic part are not worth a kernel.
    if (std::find(graph.inputs.begin(), graph.inputs.end(), out) == graph.inputs.end()) {
      part.outputs.push_back(out);
    }
  }
  if (part.outputs.empty()) {
    fail("graph '{}' has no static part: data-dependent shapes start at {}", graph.name,
         first_dynamic->describe());
  }
  part.remove_dead_nodes();
  part.validate();
  return part;
}

}  // namespace orchid
