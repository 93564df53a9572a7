// The epilogue matcher: which elementwise chains after a linear primitive become which
// oneDNN post-ops, and where and why a chain stops.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/epilogue_matcher.hpp"
#include "small_graph.hpp"

namespace orchid {
namespace {

using runtime_test::f32;
using runtime_test::make_graph;
using runtime_test::NodeSpec;
using runtime_test::one_kernel_plan;
using runtime_test::pattern;

// MatMul of x [4, 8] by a constant [8, 6], then `epilogue`, as one kernel.
EpilogueMatch match_after_matmul(
    const std::vector<NodeSpec>& epilogue,
    const std::vector<std::pair<std::string, Tensor>>& constants,
    const std::vector<std::string>& outputs,
    const std::vector<std::pair<std::string, Shape>>& more_inputs = {}) {
  std::vector<NodeSpec> nodes{{"MatMul", {"x", "w"}, {"mm"}}};
  nodes.insert(nodes.end(), epilogue.begin(), epilogue.end());
  auto all_constants = constants;
  all_constants.emplace_back("w", pattern({8, 6}));
  auto inputs = more_inputs;
  inputs.insert(inputs.begin(), {"x", {4, 8}});
  const Graph g = make_graph(inputs, all_constants, nodes, outputs);
  const Plan plan = one_kernel_plan(g);
  // Plan order may differ from node order; the linear node is the first with no producer.
  const PlannedKernel& k = plan.kernels.at(0);
  for (std::size_t pos = 0; pos < k.nodes.size(); ++pos) {
    if (g.nodes[k.nodes[pos]].op_type == "MatMul") return match_epilogue(g, k, pos);
  }
  ADD_FAILURE() << "no MatMul in the kernel";
  return {};
}

TEST(EpilogueMatcher, BiasAndReluBecomeBinaryAndEltwisePostOps) {
  const EpilogueMatch m =
      match_after_matmul({{"Add", {"mm", "b"}, {"biased"}}, {"Relu", {"biased"}, {"y"}}},
                         {{"b", pattern({6})}}, {"y"});
  ASSERT_EQ(m.post_ops.size(), 2u);
  EXPECT_EQ(m.post_ops[0], (PostOp{PostOp::Kind::Binary, OnednnAlgorithm::BinaryAdd, 0, 0, "b"}));
  EXPECT_EQ(m.post_ops[1], (PostOp{PostOp::Kind::Eltwise, OnednnAlgorithm::EltwiseRelu, 0, 0, ""}));
  EXPECT_EQ(m.result, "y");
  EXPECT_EQ(m.nodes, 3u);
  EXPECT_EQ(m.stopped, "");
}

TEST(EpilogueMatcher, ClipWithConstantBoundsAndMaxWithAScalarAreClips) {
  const EpilogueMatch m = match_after_matmul(
      {{"Clip", {"mm", "lo", "hi"}, {"c"}}, {"Max", {"c", "floor"}, {"y"}}},
      {{"lo", f32({}, {-1.0f})}, {"hi", f32({}, {6.0f})}, {"floor", f32({}, {0.5f})}}, {"y"});
  ASSERT_EQ(m.post_ops.size(), 2u);
  EXPECT_EQ(m.post_ops[0].algorithm, OnednnAlgorithm::EltwiseClip);
  EXPECT_FLOAT_EQ(m.post_ops[0].alpha, -1.0f);
  EXPECT_FLOAT_EQ(m.post_ops[0].beta, 6.0f);
  EXPECT_EQ(m.post_ops[1].algorithm, OnednnAlgorithm::EltwiseClip);
  EXPECT_FLOAT_EQ(m.post_ops[1].alpha, 0.5f);
  EXPECT_GT(m.post_ops[1].beta, 1e30f);
}

TEST(EpilogueMatcher, SwishAndGeluFromTheirFissionedForms) {
  const EpilogueMatch swish =
      match_after_matmul({{"Sigmoid", {"mm"}, {"s"}}, {"Mul", {"mm", "s"}, {"y"}}}, {}, {"y"});
  ASSERT_EQ(swish.post_ops.size(), 1u);
  EXPECT_EQ(swish.post_ops[0].algorithm, OnednnAlgorithm::EltwiseSwish);
  EXPECT_EQ(swish.nodes, 3u);

  const EpilogueMatch gelu = match_after_matmul(
      {{"Div", {"mm", "sqrt2"}, {"d"}},
       {"Erf", {"d"}, {"e"}},
       {"Add", {"e", "one"}, {"e1"}},
       {"Mul", {"mm", "e1"}, {"xe"}},
       {"Mul", {"xe", "half"}, {"y"}}},
      {{"sqrt2", f32({}, {std::sqrt(2.0f)})}, {"one", f32({}, {1.0f})}, {"half", f32({}, {0.5f})}},
      {"y"});
  ASSERT_EQ(gelu.post_ops.size(), 1u);
  EXPECT_EQ(gelu.post_ops[0].algorithm, OnednnAlgorithm::EltwiseGeluErf);
  EXPECT_EQ(gelu.nodes, 6u);
  EXPECT_EQ(gelu.result, "y");
}

// GPT-2's and ALBERT's gelu, 0.5 x (1 + Tanh(sqrt(2 / pi) (x + 0.044715 x^3))), with the
// halving on x or on the product, the nodes in either order; another cubic weight is no
// gelu.
TEST(EpilogueMatcher, GeluTanhFormWithTheHalvingEitherSide) {
  const std::vector<std::pair<std::string, Tensor>> constants{
      {"half", f32({}, {0.5f})},       {"three", f32({}, {3.0f})}, {"k", f32({}, {0.044715f})},
      {"c", f32({}, {0.7978845608f})}, {"one", f32({}, {1.0f})},   {"other_k", f32({}, {0.05f})}};
  const std::vector<NodeSpec> cube_first{
      {"Pow", {"mm", "three"}, {"p"}}, {"Mul", {"p", "k"}, {"q"}}, {"Add", {"mm", "q"}, {"s"}},
      {"Mul", {"s", "c"}, {"t"}},      {"Tanh", {"t"}, {"th"}},    {"Add", {"th", "one"}, {"a"}}};
  std::vector<NodeSpec> on_x{{"Mul", {"mm", "half"}, {"h"}}};
  on_x.insert(on_x.end(), cube_first.begin(), cube_first.end());
  on_x.push_back({"Mul", {"h", "a"}, {"y"}});
  std::vector<NodeSpec> on_product = cube_first;
  on_product.push_back({"Mul", {"mm", "a"}, {"xa"}});
  on_product.push_back({"Mul", {"half", "xa"}, {"y"}});
  for (const auto& nodes : {on_x, on_product}) {
    const EpilogueMatch m = match_after_matmul(nodes, constants, {"y"});
    ASSERT_EQ(m.post_ops.size(), 1u);
    EXPECT_EQ(m.post_ops[0].algorithm, OnednnAlgorithm::EltwiseGeluTanh);
    EXPECT_EQ(m.nodes, 9u);
    EXPECT_EQ(m.result, "y");
  }
  auto other = on_x;
  other[2].inputs[1] = "other_k";
  const EpilogueMatch m = match_after_matmul(other, constants, {"y"});
  for (const auto& op : m.post_ops) EXPECT_NE(op.algorithm, OnednnAlgorithm::EltwiseGeluTanh);
}

// A Reshape after the MatMul is passed where a post-op follows it, and after it a binary
// operand must be a scalar; a Reshape that nothing follows ends the chain.
TEST(EpilogueMatcher, PassesAReshapeWhereAPostOpFollows) {
  const std::vector<std::pair<std::string, Tensor>> constants{
      {"to3d", runtime_test::i64({3}, {2, 2, 6})}, {"s", f32({}, {2.0f})}, {"row", pattern({6})}};
  const EpilogueMatch m = match_after_matmul(
      {{"Reshape", {"mm", "to3d"}, {"r"}}, {"Tanh", {"r"}, {"t"}}, {"Mul", {"t", "s"}, {"y"}}},
      constants, {"y"});
  ASSERT_EQ(m.post_ops.size(), 2u);
  EXPECT_EQ(m.post_ops[0].algorithm, OnednnAlgorithm::EltwiseTanh);
  EXPECT_EQ(m.post_ops[1].operand, "s");
  EXPECT_EQ(m.nodes, 4u);
  EXPECT_EQ(m.reshapes, 1u);
  EXPECT_EQ(m.result, "y");

  // Two in a row (a Gemm's own Reshape, then the model's).
  const EpilogueMatch two = match_after_matmul({{"Reshape", {"mm", "to3d"}, {"r"}},
                                                {"Reshape", {"r", "to3d"}, {"r2"}},
                                                {"Tanh", {"r2"}, {"y"}}},
                                               constants, {"y"});
  ASSERT_EQ(two.post_ops.size(), 1u);
  EXPECT_EQ(two.reshapes, 2u);
  EXPECT_EQ(two.result, "y");

  const EpilogueMatch row = match_after_matmul(
      {{"Reshape", {"mm", "to3d"}, {"r"}}, {"Add", {"r", "row"}, {"y"}}}, constants, {"y"});
  EXPECT_TRUE(row.post_ops.empty());
  EXPECT_EQ(row.result, "mm");
  EXPECT_EQ(row.reshapes, 0u);

  const EpilogueMatch last = match_after_matmul(
      {{"Tanh", {"mm"}, {"t"}}, {"Reshape", {"t", "to3d"}, {"y"}}}, constants, {"y"});
  EXPECT_EQ(last.result, "t");  // a trailing Reshape is the stage builder's view
  EXPECT_EQ(last.reshapes, 0u);
}

// x * Clip(x / 6 + 0.5, 0, 1), as fission spells HardSwish: oneDNN's hardswish (its
// alpha 1/6 and beta 0.5 are fixed); another slope stays a chain of its own.
TEST(EpilogueMatcher, HardSwishFromItsFissionedForm) {
  const std::vector<std::pair<std::string, Tensor>> constants{{"sixth", f32({}, {1.0f / 6})},
                                                              {"half", f32({}, {0.5f})},
                                                              {"zero", f32({}, {0.0f})},
                                                              {"one", f32({}, {1.0f})}};
  const std::vector<NodeSpec> nodes{{"Mul", {"mm", "sixth"}, {"a"}},
                                    {"Add", {"a", "half"}, {"b"}},
                                    {"Clip", {"b", "zero", "one"}, {"c"}},
                                    {"Mul", {"mm", "c"}, {"y"}}};
  const EpilogueMatch m = match_after_matmul(nodes, constants, {"y"});
  ASSERT_EQ(m.post_ops.size(), 1u);
  EXPECT_EQ(m.post_ops[0].algorithm, OnednnAlgorithm::EltwiseHardSwish);
  EXPECT_EQ(m.nodes, 5u);
  EXPECT_EQ(m.result, "y");

  auto fifth = constants;
  fifth[0].second = f32({}, {0.2f});  // HardSigmoid's default slope: not oneDNN's hardswish
  const EpilogueMatch other = match_after_matmul(nodes, fifth, {"y"});
  for (const auto& op : other.post_ops) EXPECT_NE(op.algorithm, OnednnAlgorithm::EltwiseHardSwish);
}

TEST(EpilogueMatcher, RefusesSubtractionFromAConstant) {
  // c - x is not a oneDNN binary post-op (it computes x - c only).
  const EpilogueMatch m =
      match_after_matmul({{"Sub", {"c", "mm"}, {"y"}}}, {{"c", pattern({6})}}, {"y"});
  EXPECT_TRUE(m.post_ops.empty());
  EXPECT_EQ(m.nodes, 1u);
  EXPECT_EQ(m.result, "mm");
  EXPECT_NE(m.stopped.find("right operand"), std::string::npos) << m.stopped;
}

TEST(EpilogueMatcher, RefusesOpsWithoutAPostOpAndMaxOfATensor) {
  const EpilogueMatch exp = match_after_matmul({{"Exp", {"mm"}, {"y"}}}, {}, {"y"});
  EXPECT_TRUE(exp.post_ops.empty());
  EXPECT_NE(exp.stopped.find("no oneDNN post-op"), std::string::npos) << exp.stopped;

  const EpilogueMatch max =
      match_after_matmul({{"Max", {"mm", "z"}, {"y"}}}, {}, {"y"}, {{"z", {4, 6}}});
  EXPECT_TRUE(max.post_ops.empty());
  EXPECT_NE(max.stopped.find("not a constant scalar"), std::string::npos) << max.stopped;
}

TEST(EpilogueMatcher, RefusesOperandsThatDoNotBroadcastToTheResult) {
  // [3, 4, 6] + [4, 6] has another shape than the linear op's result.
  const EpilogueMatch m =
      match_after_matmul({{"Add", {"mm", "big"}, {"y"}}}, {}, {"y"}, {{"big", {3, 4, 6}}});
  EXPECT_TRUE(m.post_ops.empty());
  EXPECT_NE(m.stopped.find("not the linear op's shape"), std::string::npos) << m.stopped;
}

TEST(EpilogueMatcher, StopsWhereTheRunningValueIsNeededElsewhere) {
  // "r" is read twice, so it must be stored: the chain ends before its readers.
  const EpilogueMatch twice = match_after_matmul({{"Relu", {"mm"}, {"r"}},
                                                  {"Sigmoid", {"r"}, {"a"}},
                                                  {"Tanh", {"r"}, {"b"}},
                                                  {"Add", {"a", "b"}, {"y"}}},
                                                 {}, {"y"});
  ASSERT_EQ(twice.post_ops.size(), 1u);
  EXPECT_EQ(twice.result, "r");
  EXPECT_FALSE(twice.stopped.empty());

  // A graph output leaves the kernel: nothing after it is folded.
  const EpilogueMatch out =
      match_after_matmul({{"Relu", {"mm"}, {"r"}}, {"Tanh", {"r"}, {"y"}}}, {}, {"r", "y"});
  ASSERT_EQ(out.post_ops.size(), 1u);
  EXPECT_EQ(out.result, "r");
  EXPECT_NE(out.stopped.find("leaves the kernel"), std::string::npos) << out.stopped;
}

TEST(EpilogueMatcher, SingleNodeRefusalsNameTheirReason) {
  const Graph g = make_graph({{"x", {2, 3}}, {"z", {2, 3}}}, {},
                             {{"Sub", {"z", "x"}, {"y"}}, {"Relu", {"x"}, {"r"}}}, {"y", "r"});
  const Shape out{2, 3};
  auto sub = as_post_op(g, g.nodes[0], "x", out, {});
  ASSERT_FALSE(sub);
  EXPECT_NE(sub.why().find("right operand"), std::string::npos);
  auto inside = as_post_op(g, g.nodes[0], "z", out, {"x"});
  ASSERT_FALSE(inside);
  EXPECT_NE(inside.why().find("inside the chain"), std::string::npos);
  auto relu = as_post_op(g, g.nodes[1], "x", out, {});
  ASSERT_TRUE(relu);
  EXPECT_EQ(relu->algorithm, OnednnAlgorithm::EltwiseRelu);
}

}  // namespace
}  // namespace orchid
