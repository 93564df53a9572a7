// Small typed graphs built by hand for the runtime's unit tests, and a plan that runs a
// whole graph as one kernel.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.hpp"
#include "ir/op_registry.hpp"
#include "orchestrate/candidates.hpp"
#include "orchestrate/plan.hpp"
#include "util/error.hpp"

namespace orchid::runtime_test {

struct NodeSpec {
  std::string op;
  std::vector<std::string> inputs, outputs;
  std::map<std::string, Attribute> attributes = {};
};

// A typed graph of `nodes`; `inputs` are f32 graph inputs, `constants` weights; the
// outputs are `outputs`.
inline Graph make_graph(const std::vector<std::pair<std::string, Shape>>& inputs,
                        const std::vector<std::pair<std::string, Tensor>>& constants,
                        const std::vector<NodeSpec>& nodes,
                        const std::vector<std::string>& outputs) {
  Graph g;
  g.name = "runtime_test";
  g.opset = 17;
  for (const auto& [name, shape] : inputs) {
    g.set_type(name, DType::F32, shape);
    g.inputs.push_back(name);
  }
  for (const auto& [name, value] : constants) g.set_constant(name, value);
  int i = 0;
  for (const auto& spec : nodes) {
    Node n;
    n.name = "n";  // appended, not "n" + ...: GCC 12 warns falsely (-Wrestrict) on that
    n.name += std::to_string(i++);
    n.op_type = spec.op;
    n.inputs = spec.inputs;
    n.outputs = spec.outputs;
    n.attributes = spec.attributes;
    g.nodes.push_back(std::move(n));
  }
  g.outputs = outputs;
  infer_shapes(g);
  g.validate();
  return g;
}

inline Tensor f32(Shape shape, std::vector<float> v) {
  return Tensor::from_vector<float>(std::move(shape), v);
}
inline Tensor i64(Shape shape, std::vector<std::int64_t> v) {
  return Tensor::from_vector<std::int64_t>(std::move(shape), v);
}
// A constant of `shape` with values 0.01 * (i % 7 - 3): small, varied, deterministic.
inline Tensor pattern(Shape shape) {
  Tensor t(DType::F32, std::move(shape));
  auto values = t.values<float>();
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = 0.01f * static_cast<float>(static_cast<int>(i % 7) - 3);
  }
  return t;
}

// The whole graph as one kernel of a plan (a primitive graph: every node a primitive).
inline Plan one_kernel_plan(const Graph& g) {
  const PrimitiveGraphIndex index(g, {});
  std::vector<std::size_t> all(g.nodes.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  auto plan = build_plan(index, {}, {KernelChoice{all, 0.0}}, "test");
  if (!plan) internal_error("test graph cannot be scheduled as one kernel");
  return *plan;
}

// Each node of the graph as its own kernel, in node order (every tensor between two
// nodes then passes through the arena).
inline Plan node_per_kernel_plan(const Graph& g) {
  const PrimitiveGraphIndex index(g, {});
  std::vector<KernelChoice> each;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) each.push_back(KernelChoice{{i}, 0.0});
  auto plan = build_plan(index, {}, each, "test");
  if (!plan) internal_error("test graph cannot be scheduled one node per kernel");
  return *plan;
}

}  // namespace orchid::runtime_test
