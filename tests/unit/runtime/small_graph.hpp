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

// GPT-2's gelu, 0.5 x (1 + Tanh(sqrt(2 / pi) (x + 0.044715 x^3))), of `x` into `y` as
// its eight nodes (intermediates named `x` + "_g0".."_g6"), and the scalars they read.
inline std::vector<NodeSpec> gelu_tanh_nodes(const std::string& x, const std::string& y) {
  auto t = [&](int i) { return x + "_g" + std::to_string(i); };
  return {{"Mul", {x, "gelu_half"}, {t(0)}},   {"Pow", {x, "gelu_three"}, {t(1)}},
          {"Mul", {t(1), "gelu_k"}, {t(2)}},   {"Add", {x, t(2)}, {t(3)}},
          {"Mul", {t(3), "gelu_c"}, {t(4)}},   {"Tanh", {t(4)}, {t(5)}},
          {"Add", {t(5), "gelu_one"}, {t(6)}}, {"Mul", {t(0), t(6)}, {y}}};
}
inline std::vector<std::pair<std::string, Tensor>> gelu_tanh_constants() {
  return {{"gelu_half", f32({}, {0.5f})},
          {"gelu_three", f32({}, {3.0f})},
          {"gelu_k", f32({}, {0.044715f})},
          {"gelu_c", f32({}, {0.7978845608f})},
          {"gelu_one", f32({}, {1.0f})}};
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
