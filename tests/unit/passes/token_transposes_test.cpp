// Token <-> image transposes turned around (passes/token_transposes.hpp): a SegFormer
// Mix-FFN block's pattern is rewritten on both sides of its depthwise convolution, the
// result is bit for bit what the original computes (the same values are moved, nothing is
// rounded), and what the rewrite must not touch stays as it was.
#include "passes/token_transposes.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "eval/random_inputs.hpp"
#include "eval/reference_interpreter.hpp"
#include "passes/load_model.hpp"
#include "passes/pass_test_util.hpp"
#include "runtime/small_graph.hpp"

namespace orchid {
namespace {

using runtime_test::i64;
using runtime_test::make_graph;
using runtime_test::pattern;

using pass_test::count_op;

void expect_identical_outputs(const Graph& original, const Graph& rewritten) {
  pass_test::expect_same_outputs(original, rewritten, 0.0, 0.0, 3);
}

// tokens [2, 12, 4] -> [2, 4, 12] -> [2, 4, 3, 4] -> depthwise Conv -> [2, 4, 12] -> [2, 12, 4]
Graph mix_ffn() {
  return make_graph(
      {{"tokens", {2, 12, 4}}},
      {{"w", pattern({4, 1, 3, 3})},
       {"b", pattern({4})},
       {"to_image", i64({4}, {2, 4, 3, 4})},
       {"to_tokens", i64({3}, {2, 4, -1})}},
      {{"Transpose", {"tokens"}, {"t"}, {{"perm", std::vector<std::int64_t>{0, 2, 1}}}},
       {"Reshape", {"t", "to_image"}, {"image"}},
       {"Conv",
        {"image", "w", "b"},
        {"c"},
        {{"group", std::int64_t{4}}, {"pads", std::vector<std::int64_t>{1, 1, 1, 1}}}},
       {"Reshape", {"c", "to_tokens"}, {"flat"}},
       {"Transpose", {"flat"}, {"y"}, {{"perm", std::vector<std::int64_t>{0, 2, 1}}}}},
      {"y"});
}

TEST(TokenTransposes, BothSidesOfATokenConvolutionTurnAround) {
  const Graph g = mix_ffn();
  Graph rewritten = g;
  EXPECT_EQ(regroup_token_transposes(rewritten).rewritten, 2u);
  rewritten.validate();
  // The transposes are now 4-D NHWC <-> NCHW changes, the reshapes 3-D <-> 4-D.
  std::vector<std::vector<std::int64_t>> perms;
  for (const Node& n : rewritten.nodes) {
    if (n.op_type == "Transpose") perms.push_back(n.attr_ints("perm", {}));
  }
  EXPECT_EQ(perms, (std::vector<std::vector<std::int64_t>>{{0, 3, 1, 2}, {0, 2, 3, 1}}));
  EXPECT_EQ(count_op(rewritten, "Reshape"), 2u);
  EXPECT_FALSE(rewritten.has_tensor("t"));
  EXPECT_FALSE(rewritten.has_tensor("flat"));
  expect_identical_outputs(g, rewritten);
}

TEST(TokenTransposes, LeavesSharedOutputAndMismatchedShapesAlone) {
  Graph shared = mix_ffn();
  shared.outputs.push_back("t");  // the transposed tokens are needed as they are
  shared.outputs.push_back("flat");
  EXPECT_EQ(regroup_token_transposes(shared).rewritten, 0u);
  // A reshape that does not split the token axis into H x W (it regroups channels).
  const Graph other =
      make_graph({{"tokens", {2, 12, 4}}}, {{"shape", i64({4}, {2, 2, 2, 12})}},
                 {{"Transpose", {"tokens"}, {"t"}, {{"perm", std::vector<std::int64_t>{0, 2, 1}}}},
                  {"Reshape", {"t", "shape"}, {"y"}}},
                 {"y"});
  Graph copy = other;
  EXPECT_EQ(regroup_token_transposes(copy).rewritten, 0u);
  EXPECT_EQ(copy.nodes.size(), other.nodes.size());
}

TEST(TokenTransposes, LongSegFormerTurnsItsMixFfnTransposesAndKeepsItsOutputs) {
  const std::string path =
      (std::filesystem::path(ORCHID_MODELS_DIR) / "segformer_b0.onnx").string();
  Graph original = read_onnx(path);
  make_static(original);  // every pass load_model runs before this one
  fold_affine_into_linear(original);
  convolve_before_upsampling(original);
  const LoadedModel loaded = load_model(path);
  // Eight Mix-FFN blocks, a transpose on each side of their depthwise convolutions.
  EXPECT_GE(loaded.token_transposes.rewritten, 16u);
  expect_identical_outputs(original, loaded.graph);
}

}  // namespace
}  // namespace orchid
