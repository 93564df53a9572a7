#include "passes/static_graph.hpp"

#include <algorithm>

#include "ir/op_registry.hpp"
#include "runtime/reference_interpreter.hpp"

namespace orchid {

namespace {

// Ops whose result depends only on input shapes, not values.
bool depends_only_on_shapes(const Node& node) {
  return node.op_type == "Shape" || node.op_type == "Size";
}

bool can_fold(const Graph& graph, const Node& node, const StaticGraphOptions& options) {
  if (node.outputs.empty()) return false;
  if (depends_only_on_shapes(node)) return true;
  for (const auto& in : node.inputs) {
    if (!in.empty() && !graph.is_constant(in)) return false;
  }
  std::int64_t elements = 0;
  for (const auto& out : node.outputs) {
    if (!out.empty()) elements += shape_numel(graph.tensor(out).shape);
  }
  return elements <= options.max_folded_elements;
}

}  // namespace

StaticGraphStats make_static(Graph& graph, const StaticGraphOptions& options) {
  StaticGraphStats stats;
  stats.nodes_before = graph.nodes.size();
  graph.sort_topologically();

  std::vector<bool> folded(graph.nodes.size(), false);
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    infer_node_types(graph, node);
    if (!can_fold(graph, node, options)) continue;
    std::vector<Tensor> results;
    if (depends_only_on_shapes(node)) {
      // Shapes are static, so Shape/Size are known without the input's values.
      const Shape& shape = graph.tensor(node.inputs[0]).shape;
      const auto rank = static_cast<std::int64_t>(shape.size());
      if (node.op_type == "Size") {
        results.push_back(Tensor::from_vector<std::int64_t>({}, {shape_numel(shape)}));
      } else {
        std::int64_t start = node.attr_int("start", 0);
        std::int64_t end = node.attr_int("end", rank);
        if (start < 0) start += rank;
        if (end < 0) end += rank;
        start = std::clamp<std::int64_t>(start, 0, rank);
        end = std::clamp<std::int64_t>(end, 0, rank);
        std::vector<std::int64_t> dims;
        for (std::int64_t d = start; d < end; ++d)
          dims.push_back(shape[static_cast<std::size_t>(d)]);
        results.push_back(Tensor::from_int64s(dims));
      }
    } else {
      std::vector<const Tensor*> inputs;
      for (const auto& in : node.inputs) {
        inputs.push_back(in.empty() ? nullptr : graph.tensor(in).data.get());
      }
      results = run_reference_node(graph, node, inputs);
    }
    for (std::size_t k = 0; k < node.outputs.size(); ++k) {
      if (node.outputs[k].empty()) continue;
      graph.set_constant(node.outputs[k], std::move(results[k]));
    }
    folded[i] = true;
    ++stats.folded_nodes;
  }

  std::vector<Node> kept;
  kept.reserve(graph.nodes.size());
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    if (!folded[i]) kept.push_back(std::move(graph.nodes[i]));
  }
  graph.nodes = std::move(kept);
  const std::size_t before_dce = graph.nodes.size();
  graph.remove_dead_nodes();
  stats.dead_nodes = before_dce - graph.nodes.size();
  stats.nodes_after = graph.nodes.size();
  graph.validate();
  return stats;
}

}  // namespace orchid
