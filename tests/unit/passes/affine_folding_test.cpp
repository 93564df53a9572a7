// Affine folding (passes/affine_folding.hpp): the folded graph computes what the original
// did, on the reference interpreter, within |folded - original| <= 1e-5 + 1e-4 * |original|
// (only float rounding differs), and folds exactly what it may.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "eval/random_inputs.hpp"
#include "eval/reference_interpreter.hpp"
#include "onnx/onnx_reader.hpp"
#include "passes/affine_folding.hpp"
#include "passes/load_model.hpp"
#include "passes/pass_test_util.hpp"
#include "passes/static_graph.hpp"
#include "runtime/small_graph.hpp"

namespace orchid {
namespace {

using runtime_test::f32;
using runtime_test::make_graph;
using runtime_test::pattern;

using pass_test::count_op;
using pass_test::expect_same_outputs;

Tensor positive(Shape shape) {
  Tensor t = pattern(std::move(shape));
  for (float& v : t.values<float>()) v = 0.5f + std::fabs(v) * 10.0f;
  return t;
}

TEST(AffineFolding, ConvBatchNormMulAddBecomeOneConv) {
  const Graph g = make_graph(
      {{"x", {1, 3, 6, 6}}},
      {{"w", pattern({4, 3, 3, 3})},
       {"b", pattern({4})},
       {"scale", positive({4})},
       {"shift", pattern({4})},
       {"mean", pattern({4})},
       {"var", positive({4})},
       {"m", positive({4, 1, 1})},
       {"a", pattern({1, 4, 1, 1})},
       {"s", f32({}, {0.25f})}},
      {{"Conv", {"x", "w", "b"}, {"c"}, {{"pads", std::vector<std::int64_t>{1, 1, 1, 1}}}},
       {"BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"bn"}},
       {"Mul", {"m", "bn"}, {"mul"}},
       {"Add", {"mul", "a"}, {"add"}},
       {"Sub", {"add", "s"}, {"y"}}},
      {"y"});
  Graph folded = g;
  EXPECT_EQ(fold_affine_into_linear(folded).folded_nodes, 4u);
  ASSERT_EQ(folded.nodes.size(), 1u);
  EXPECT_EQ(folded.nodes[0].op_type, "Conv");
  EXPECT_EQ(folded.nodes[0].outputs[0], "y");
  EXPECT_FALSE(folded.has_tensor("w") && folded.is_constant("w") &&
               folded.nodes[0].inputs[1] == "w");  // a folded copy, not the original
  // Each replaced weight is dropped as soon as nothing reads it: one copy is left.
  EXPECT_FALSE(folded.has_tensor("w"));
  int weight_copies = 0;
  for (const auto& name : folded.weights()) weight_copies += folded.tensor(name).shape.size() == 4;
  EXPECT_EQ(weight_copies, 1);
  expect_same_outputs(g, folded, 1e-5, 1e-4);
}

TEST(AffineFolding, GemmAndMatMulFoldPerColumn) {
  const Graph g =
      make_graph({{"x", {2, 5}}, {"z", {3, 5}}},
                 {{"wt", pattern({4, 5})},
                  {"c", pattern({4})},
                  {"m", positive({4})},
                  {"k", pattern({5, 4})},
                  {"d", positive({1, 4})},
                  {"bias", pattern({4})}},
                 {{"Gemm", {"x", "wt", "c"}, {"g"}, {{"transB", std::int64_t{1}}, {"beta", 0.5f}}},
                  {"Mul", {"g", "m"}, {"gm"}},
                  {"Sub", {"gm", "c"}, {"y"}},
                  {"MatMul", {"z", "k"}, {"mm"}},
                  {"Div", {"mm", "d"}, {"md"}},
                  {"Add", {"md", "bias"}, {"y2"}}},  // a MatMul has no bias input: this Add stays
                 {"y", "y2"});
  Graph folded = g;
  EXPECT_EQ(fold_affine_into_linear(folded).folded_nodes, 3u);
  EXPECT_EQ(count_op(folded, "Mul") + count_op(folded, "Sub") + count_op(folded, "Div"), 0u);
  EXPECT_EQ(count_op(folded, "Add"), 1u);
  expect_same_outputs(g, folded, 1e-5, 1e-4);
}

// ALBERT's layers share one set of weights, and each layer scales them alike: one folded
// copy serves them all; a different scale gets its own.
TEST(AffineFolding, SharedWeightsScaledAlikeShareOneFoldedCopy) {
  const Graph g = make_graph(
      {{"x", {3, 5}}}, {{"k", pattern({5, 5})}, {"s", f32({}, {0.125f})}, {"t", positive({5})}},
      {{"MatMul", {"x", "k"}, {"m1"}},
       {"Mul", {"m1", "s"}, {"h1"}},
       {"MatMul", {"h1", "k"}, {"m2"}},
       {"Mul", {"m2", "s"}, {"h2"}},
       {"MatMul", {"h2", "k"}, {"m3"}},
       {"Mul", {"m3", "t"}, {"y"}}},
      {"y"});
  Graph folded = g;
  EXPECT_EQ(fold_affine_into_linear(folded).folded_nodes, 3u);
  ASSERT_EQ(folded.nodes.size(), 3u);
  EXPECT_EQ(folded.nodes[0].inputs[1], folded.nodes[1].inputs[1]);
  EXPECT_NE(folded.nodes[0].inputs[1], folded.nodes[2].inputs[1]);
  EXPECT_FALSE(folded.has_tensor("k"));
  std::size_t copies = 0;
  for (const auto& name : folded.weights()) copies += folded.tensor(name).shape == Shape{5, 5};
  EXPECT_EQ(copies, 2u);
  expect_same_outputs(g, folded, 1e-5, 1e-4);
}

TEST(AffineFolding, LeavesSharedResultsAndNonChannelConstantsAlone) {
  const Graph g = make_graph(
      {{"x", {1, 2, 4, 4}}},
      {{"w", pattern({2, 2, 1, 1})}, {"m", positive({2, 1, 1})}, {"sp", pattern({1, 1, 4, 4})}},
      {{"Conv", {"x", "w"}, {"c"}},
       {"Mul", {"c", "m"}, {"y"}},  // c has a second reader below
       {"Relu", {"c"}, {"r"}},
       {"Conv", {"r", "w"}, {"c2"}},
       {"Add", {"c2", "sp"}, {"y2"}},  // varies along H and W, not per channel
       {"Conv", {"x", "w"}, {"c3"}},
       {"Sub", {"m", "c3"}, {"y3"}}},  // m - c3 is not an affine map of c3 with scale 1
      {"y", "r", "y2", "y3"});
  Graph folded = g;
  EXPECT_EQ(fold_affine_into_linear(folded).folded_nodes, 0u);
  EXPECT_EQ(folded.nodes.size(), g.nodes.size());
}

TEST(AffineFolding, LongResNet50FoldsEveryBatchNormAndKeepsItsOutputs) {
  const std::string path = (std::filesystem::path(ORCHID_MODELS_DIR) / "resnet50.onnx").string();
  Graph original = read_onnx(path);
  make_static(original);
  const LoadedModel folded = load_model(path);
  EXPECT_EQ(count_op(original, "BatchNormalization"), 53u);
  EXPECT_EQ(folded.affine.folded_nodes, 53u);
  EXPECT_EQ(count_op(folded.graph, "BatchNormalization"), 0u);
  expect_same_outputs(original, folded.graph, 1e-4, 1e-3);
}

}  // namespace
}  // namespace orchid
