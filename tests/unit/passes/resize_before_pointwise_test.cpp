// 1x1 convolutions moved before the upsampling of their concatenated operands
// (passes/resize_before_pointwise.hpp): the rewritten graph computes what the original
// did on the reference interpreter within |new - old| <= 1e-5 + 1e-4 |old| (sums in
// another order), for linear and nearest Resizes given by scales or sizes, an identity
// Resize, and two convolutions reading one Concat; what must not change stays.
#include "passes/resize_before_pointwise.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "eval/random_inputs.hpp"
#include "eval/reference_interpreter.hpp"
#include "passes/load_model.hpp"
#include "passes/pass_test_util.hpp"
#include "runtime/small_graph.hpp"

namespace orchid {
namespace {

using runtime_test::f32;
using runtime_test::i64;
using runtime_test::make_graph;
using runtime_test::pattern;

using pass_test::count_op;

void expect_same_outputs(const Graph& original, const Graph& rewritten) {
  pass_test::expect_same_outputs(original, rewritten, 1e-5, 1e-4, 4);
}

// A decoder: a full-resolution operand, an identity-size Resize, a 2x linear Resize by
// scales and a 4x nearest Resize by sizes, concatenated and fused by a 1x1 Conv + ReLU;
// a second 1x1 Conv reads the same Concat.
Graph decoder() {
  return make_graph(
      {{"x0", {1, 3, 8, 8}}, {"x1", {1, 4, 8, 8}}, {"x2", {1, 5, 4, 4}}, {"x3", {1, 2, 2, 2}}},
      {{"w", pattern({6, 14, 1, 1})},
       {"b", pattern({6})},
       {"w2", pattern({3, 14, 1, 1})},
       {"one", f32({4}, {1, 1, 1, 1})},
       {"two", f32({4}, {1, 1, 2, 2})},
       {"sizes", i64({4}, {1, 2, 8, 8})}},
      {{"Resize", {"x1", "", "one"}, {"r1"}, {{"mode", std::string("linear")}}},
       {"Resize", {"x2", "", "two"}, {"r2"}, {{"mode", std::string("linear")}}},
       {"Resize", {"x3", "", "", "sizes"}, {"r3"}, {{"mode", std::string("nearest")}}},
       {"Concat", {"x0", "r1", "r2", "r3"}, {"c"}, {{"axis", std::int64_t{1}}}},
       {"Conv", {"c", "w", "b"}, {"y"}},
       {"Relu", {"y"}, {"out"}},
       {"Conv", {"c", "w2"}, {"out2"}}},
      {"out", "out2"});
}

TEST(ResizeBeforePointwise, ConvolvesEachOperandAtItsOwnResolution) {
  const Graph g = decoder();
  Graph rewritten = g;
  EXPECT_EQ(convolve_before_upsampling(rewritten).convolutions, 2u);
  rewritten.validate();
  EXPECT_EQ(count_op(rewritten, "Concat"), 0u);
  // Per convolution: one per operand; the two real upsamplings stay, after it.
  EXPECT_EQ(count_op(rewritten, "Conv"), 8u);
  EXPECT_EQ(count_op(rewritten, "Resize"), 4u);
  for (const Node& n : rewritten.nodes) {
    if (n.op_type != "Resize") continue;
    const Shape& in = rewritten.tensor(n.inputs[0]).shape;
    EXPECT_LT(in[2], 8) << n.describe();  // resizes a convolution's low-resolution result
    EXPECT_TRUE(in[1] == 6 || in[1] == 3) << n.describe();
  }
  expect_same_outputs(g, rewritten);
}

TEST(ResizeBeforePointwise, LeavesOtherReadersAndKernelsAlone) {
  // The Concat is also a graph output; a 3x3 convolution reads another; nothing
  // upsamples in a third.
  for (int variant = 0; variant < 3; ++variant) {
    std::vector<runtime_test::NodeSpec> nodes{
        {"Resize", {"x1", "", "two"}, {"r1"}, {{"mode", std::string("linear")}}},
        {"Concat", {"x0", variant == 2 ? "x0b" : "r1"}, {"c"}, {{"axis", std::int64_t{1}}}},
        {"Conv", {"c", variant == 1 ? "w3" : "w"}, {"y"}}};
    std::vector<std::string> outputs{"y"};
    if (variant == 0) outputs.push_back("c");
    if (variant == 2) outputs.push_back("r1");
    const Graph g = make_graph({{"x0", {1, 3, 8, 8}}, {"x0b", {1, 4, 8, 8}}, {"x1", {1, 4, 4, 4}}},
                               {{"w", pattern({2, 7, 1, 1})},
                                {"w3", pattern({2, 7, 3, 3})},
                                {"two", f32({4}, {1, 1, 2, 2})}},
                               nodes, outputs);
    Graph copy = g;
    EXPECT_EQ(convolve_before_upsampling(copy).convolutions, 0u) << variant;
    EXPECT_EQ(copy.nodes.size(), g.nodes.size()) << variant;
  }
}

TEST(ResizeBeforePointwise, LongSegFormerDecoderFusesAtLowResolutionAndKeepsItsOutputs) {
  const std::string path =
      (std::filesystem::path(ORCHID_MODELS_DIR) / "segformer_b0.onnx").string();
  Graph original = read_onnx(path);
  make_static(original);
  const LoadedModel loaded = load_model(path);
  EXPECT_EQ(loaded.resize_commute.convolutions, 1u);
  EXPECT_EQ(count_op(loaded.graph, "Concat"), count_op(original, "Concat") - 1);
  expect_same_outputs(original, loaded.graph);
}

}  // namespace
}  // namespace orchid
