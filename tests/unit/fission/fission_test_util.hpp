// Shared by the fission rule tests (one file per op family): checks that a rule's output
// holds only primitives and computes what the op computes. Tolerances: single ops
// |fissioned - original| <= 1e-5 + 1e-4 * |original|; zoo models
// |a - b| <= 2e-5 * (1 + max|original|) + 1e-4 * |original| per output, since rounding of
// reassociated arithmetic (folded BatchNorm, f32 instead of f64 statistics) adds up over
// dozens of layers; the worst seen is about 2e-6 * (1 + max|original|).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <set>

#include "eval/random_inputs.hpp"
#include "eval/reference_interpreter.hpp"
#include "fission/fission.hpp"
#include "fission/primitive.hpp"
#include "onnx/onnx_writer.hpp"
#include "op_test_util.hpp"
#include "passes/load_model.hpp"

namespace orchid::fission_test {

namespace fs = std::filesystem;

using testing::f32;
using testing::i64;
using testing::OpInput;
using testing::single_op_graph;
using Attrs = std::map<std::string, Attribute>;

inline std::multiset<std::string> op_types(const Graph& g) {
  std::multiset<std::string> ops;
  for (const Node& node : g.nodes) ops.insert(node.op_type);
  return ops;
}

inline std::set<std::string> distinct_ops(const Graph& g) {
  const auto ops = op_types(g);
  return {ops.begin(), ops.end()};
}

inline Tensor random_f32(Shape shape, std::uint64_t seed, float lo = -1.0F, float hi = 1.0F) {
  Tensor t(DType::F32, std::move(shape));
  std::uint64_t state = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (float& v : t.values<float>()) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u = static_cast<double>(state >> 11) / 9007199254740992.0;
    v = lo + static_cast<float>(u) * (hi - lo);
  }
  return t;
}

// `worst`, when given, receives max over outputs of max|a - b| / (1 + max|b|).
inline ::testing::AssertionResult outputs_match(const Graph& original, const Graph& fissioned,
                                                const TensorMap& feed, double atol, double rtol,
                                                bool scale_atol = false, double* worst = nullptr) {
  const TensorMap expected = ReferenceInterpreter(original).run(feed);
  const TensorMap actual = ReferenceInterpreter(fissioned).run(feed);
  if (worst) *worst = 0;
  for (const auto& name : original.outputs) {
    const Tensor& a = actual.at(name);
    const Tensor& b = expected.at(name);
    double peak = 0, diff = 0;
    for (std::int64_t i = 0; i < b.numel() && a.shape() == b.shape(); ++i) {
      peak = std::max(peak, std::fabs(b.get_as_double(i)));
      diff = std::max(diff, std::fabs(a.get_as_double(i) - b.get_as_double(i)));
    }
    if (worst) *worst = std::max(*worst, diff / (1.0 + peak));
    auto r = testing::tensors_close(a, b, rtol, scale_atol ? atol * (1.0 + peak) : atol);
    if (!r) return r << " (output " << name << ")";
  }
  return ::testing::AssertionSuccess();
}

// Fissions `g`, checks it holds only primitives whose ops are exactly `expected_ops`,
// that every node has an origin, and that it computes what `g` computes on `feed`
// (random inputs when empty).
inline FissionResult check_rule(const Graph& g, const std::set<std::string>& expected_ops,
                                TensorMap feed = {}) {
  FissionResult r = fission(g);
  EXPECT_NO_THROW(r.graph.validate());
  for (const Node& node : r.graph.nodes) {
    EXPECT_TRUE(is_primitive(node)) << node.describe();
    EXPECT_TRUE(r.origin.count(node.name)) << node.name << " has no origin";
  }
  EXPECT_EQ(distinct_ops(r.graph), expected_ops) << r.graph.to_string();
  EXPECT_EQ(r.graph.inputs, g.inputs);
  EXPECT_EQ(r.graph.outputs, g.outputs);
  if (feed.empty()) feed = make_random_inputs(g, 7);
  EXPECT_TRUE(outputs_match(g, r.graph, feed, 1e-5, 1e-4)) << r.graph.to_string();
  return r;
}

inline std::map<PrimitiveClass, std::size_t> classes(const FissionResult& r) {
  return primitive_class_histogram(r.graph);
}

inline constexpr auto kElementwise = PrimitiveClass::Elementwise;
inline constexpr auto kReduce = PrimitiveClass::ReduceBroadcast;
inline constexpr auto kLayout = PrimitiveClass::Layout;
inline constexpr auto kLinear = PrimitiveClass::Linear;

// The softmax · V alternative (softmax_test, zoo_fission_test).

// Graph: Y = Softmax(X) · V, X [x_shape], V [v_shape].
inline Graph attention_graph(const Shape& x_shape, const Shape& v_shape) {
  Graph g;
  g.name = "attention";
  g.set_type("X", DType::F32, x_shape);
  g.set_type("V", DType::F32, v_shape);
  g.inputs = {"X", "V"};
  g.outputs = {"Y"};
  g.nodes.push_back(Node{"softmax", "Softmax", "", {{"axis", std::int64_t{-1}}}, {"X"}, {"P"}});
  g.nodes.push_back(Node{"matmul", "MatMul", "", {}, {"P", "V"}, {"Y"}});
  infer_shapes(g);
  g.validate();
  return g;
}

// Runs the alternative subgraphs by exposing their tensors as extra outputs, and
// checks each equals the tensor it stands for.
inline void expect_alternatives_match(const Graph& model, const FissionResult& r,
                                      std::uint64_t seed, double atol = 1e-5, double rtol = 1e-4) {
  Graph probe = r.graph;
  for (const auto& [alt, main] : r.alternatives) {
    probe.outputs.push_back(alt);
    if (std::find(probe.outputs.begin(), probe.outputs.end(), main) == probe.outputs.end()) {
      probe.outputs.push_back(main);
    }
  }
  const TensorMap out = ReferenceInterpreter(probe).run(make_random_inputs(model, seed));
  for (const auto& [alt, main] : r.alternatives) {
    EXPECT_TRUE(testing::tensors_close(out.at(alt), out.at(main), rtol, atol))
        << alt << " vs " << main;
  }
}

// Nodes the graph outputs need; none of them may read an alternative tensor. Returns
// how many nodes only alternatives need.
inline std::size_t expect_main_graph_ignores_alternatives(const FissionResult& r) {
  const auto producers = r.graph.producers();
  std::set<std::string> needed(r.graph.outputs.begin(), r.graph.outputs.end());
  std::vector<std::string> stack(needed.begin(), needed.end());
  while (!stack.empty()) {
    const std::string t = stack.back();
    stack.pop_back();
    auto p = producers.find(t);
    if (p == producers.end()) continue;
    for (const auto& in : r.graph.nodes[p->second].inputs) {
      if (!in.empty() && needed.insert(in).second) stack.push_back(in);
    }
  }
  for (const auto& [alt, main] : r.alternatives) EXPECT_FALSE(needed.count(alt)) << alt;
  std::size_t extra = 0;
  for (const Node& node : r.graph.nodes) extra += needed.count(node.outputs[0]) ? 0 : 1;
  return extra;
}

}  // namespace orchid::fission_test
