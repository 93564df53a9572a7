// Operator fission: Gemm, Conv, ConvTranspose and MatMul rules.
#include "fission/fission_test_util.hpp"

namespace orchid {
namespace {

using namespace fission_test;

// ---------------------------------------------------------------- linear

TEST(FissionGemm, TransposedConstantBFoldsAndAlphaGoesIntoTheWeight) {
  const Graph g = single_op_graph("Gemm",
                                  {{"a", random_f32({3, 4}, 26)},
                                   {"b", random_f32({5, 4}, 27), true},
                                   {"c", random_f32({5}, 28), true}},
                                  {{"transB", std::int64_t{1}}, {"alpha", 0.5F}, {"beta", 2.0F}});
  const FissionResult r = check_rule(g, {"MatMul", "Add"});
  EXPECT_EQ(classes(r), (std::map<PrimitiveClass, std::size_t>{{kElementwise, 1}, {kLinear, 1}}));
}

TEST(FissionGemm, RuntimeOperandsTransposeA) {
  const Graph g = single_op_graph(
      "Gemm",
      {{"a", random_f32({4, 3}, 29)}, {"b", random_f32({4, 5}, 30)}, {"c", random_f32({3, 5}, 31)}},
      {{"transA", std::int64_t{1}}, {"alpha", 1.5F}, {"beta", 0.5F}});
  check_rule(g, {"Transpose", "MatMul", "Mul", "Add"});
}

TEST(FissionGemm, PlainIsOneMatMul) {
  const Graph g =
      single_op_graph("Gemm", {{"a", random_f32({2, 3}, 32)}, {"b", random_f32({3, 4}, 33)}});
  const FissionResult r = check_rule(g, {"MatMul"});
  EXPECT_EQ(r.graph.nodes.size(), 1U);
}

TEST(FissionConv, BiasBecomesAnAdd) {
  const Graph g = single_op_graph(
      "Conv",
      {{"x", random_f32({1, 4, 6, 6}, 34)},
       {"w", random_f32({6, 2, 3, 3}, 35), true},
       {"b", random_f32({6}, 36), true}},
      {{"group", std::int64_t{2}}, {"pads", std::vector<std::int64_t>{1, 1, 1, 1}}});
  const FissionResult r = check_rule(g, {"Conv", "Add"});
  EXPECT_EQ(r.graph.nodes[0].name, "n0");  // the linear primitive keeps the model's name
  EXPECT_EQ(r.graph.nodes[0].inputs.size(), 2U);
}

TEST(FissionConv, WithoutBiasPassesThrough) {
  const Graph g = single_op_graph(
      "Conv", {{"x", random_f32({1, 2, 5, 5}, 37)}, {"w", random_f32({3, 2, 3, 3}, 38), true}});
  const FissionResult r = check_rule(g, {"Conv"});
  EXPECT_EQ(r.origin.at("n0"), "n0");
}

TEST(FissionConv, ConvTransposeBias) {
  const Graph g = single_op_graph("ConvTranspose",
                                  {{"x", random_f32({1, 3, 4, 4}, 39)},
                                   {"w", random_f32({3, 2, 3, 3}, 40), true},
                                   {"b", random_f32({2}, 41), true}},
                                  {{"strides", std::vector<std::int64_t>{2, 2}}});
  check_rule(g, {"ConvTranspose", "Add"});
}

TEST(FissionLinear, MatMulPassesThrough) {
  check_rule(
      single_op_graph("MatMul", {{"a", random_f32({2, 3, 4}, 42)}, {"b", random_f32({4, 5}, 43)}}),
      {"MatMul"});
}

}  // namespace
}  // namespace orchid
