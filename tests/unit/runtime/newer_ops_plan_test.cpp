// The newer op forms (opsets 18-24: Gelu, Mish, Swish, GroupNormalization in both forms,
// RMSNormalization, RotaryEmbedding, Attention, Col2Im, Resize's antialias and
// keep_aspect_ratio_policy) through fission (only primitives, same
// results as the op: |a - b| <= 1e-5 + 1e-4 |b|) and through orchestration and the CPU
// plan executor (the optimal plan against the reference interpreter:
// |plan - ref| <= 1e-4 + 1e-3 |ref|, as for the zoo models).
#include <gtest/gtest.h>

#include <cmath>

#include "cost/cost_model.hpp"
#include "fission/fission_test_util.hpp"
#include "orchestrate/orchestrator.hpp"
#include "runtime/plan_executor.hpp"
#include "runtime/small_graph.hpp"
#include "test_config_roots.hpp"

namespace orchid {
namespace {

using namespace fission_test;
using Ints = std::vector<std::int64_t>;

Tensor bools(Shape shape, std::uint64_t seed) {
  const Tensor r = random_f32(shape, seed);
  Tensor t(DType::Bool, std::move(shape));
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.values<bool>()[static_cast<std::size_t>(i)] = r.get_as_double(i) > -0.6;
  return t;
}

void expect_plan_matches(const Graph& g) {
  SCOPED_TRACE(g.name);
  const FissionResult r = fission(g);
  for (const Node& node : r.graph.nodes) EXPECT_TRUE(is_primitive(node)) << node.describe();
  const TensorMap feed = make_random_inputs(g, 3);
  EXPECT_TRUE(outputs_match(g, r.graph, feed, 1e-5, 1e-4));

  const auto cost_model = make_analytic_cost_model(load_device_spec("cpu", test::source_configs()));
  OrchestrateOptions options;
  options.time_limit_s = 10;
  const Orchestration o = orchestrate(g, *cost_model, options);
  const TensorMap expected = ReferenceInterpreter(g).run(feed);
  PlanExecutor executor(o.fission.graph, o.optimal, o.fission.alternatives);
  const TensorMap got = executor.run(feed);
  for (const auto& [name, want] : expected) {
    EXPECT_TRUE(testing::tensors_close(got.at(name), want, 1e-3, 1e-4)) << name;
  }
}

TEST(NewerOpsPlan, Activations) {
  expect_plan_matches(single_op_graph("Gelu", {{"x", random_f32({2, 3, 8}, 1, -3, 3)}}));
  expect_plan_matches(single_op_graph("Gelu", {{"x", random_f32({2, 3, 8}, 2, -3, 3)}},
                                      {{"approximate", std::string("tanh")}}));
  expect_plan_matches(single_op_graph("Mish", {{"x", random_f32({4, 9}, 3, -4, 4)}}));
  expect_plan_matches(
      single_op_graph("Swish", {{"x", random_f32({4, 9}, 4, -4, 4)}}, {{"alpha", 0.7F}}));
}

TEST(NewerOpsPlan, GroupAndRmsNormalization) {
  // Opset 21 (per channel) and opset 18 (per group) scale and bias.
  expect_plan_matches(single_op_graph("GroupNormalization",
                                      {{"x", random_f32({2, 6, 3, 4}, 5)},
                                       {"scale", random_f32({6}, 6), true},
                                       {"bias", random_f32({6}, 7), true}},
                                      {{"num_groups", std::int64_t{3}}}));
  expect_plan_matches(single_op_graph("GroupNormalization",
                                      {{"x", random_f32({2, 6, 5}, 8)},
                                       {"scale", random_f32({2}, 9), true},
                                       {"bias", random_f32({2}, 10), true}},
                                      {{"num_groups", std::int64_t{2}}, {"epsilon", 1e-3F}}));
  expect_plan_matches(
      single_op_graph("RMSNormalization",
                      {{"x", random_f32({2, 3, 8}, 11)}, {"scale", random_f32({3, 8}, 12), true}},
                      {{"axis", std::int64_t{1}}}));
}

TEST(NewerOpsPlan, RotaryEmbedding) {
  // 3D input with position ids, half-split pairs over part of each head.
  expect_plan_matches(
      single_op_graph("RotaryEmbedding",
                      {{"x", random_f32({2, 3, 16}, 13)},
                       {"cos", random_f32({10, 2}, 14), true},
                       {"sin", random_f32({10, 2}, 15), true},
                       {"ids", testing::i64({2, 3}, {0, 1, 2, 9, 4, 4}), true}},
                      {{"num_heads", std::int64_t{2}}, {"rotary_embedding_dim", std::int64_t{4}}}));
  // 4D input, caches per (batch, position), interleaved pairs.
  expect_plan_matches(single_op_graph("RotaryEmbedding",
                                      {{"x", random_f32({1, 2, 3, 6}, 16)},
                                       {"cos", random_f32({1, 3, 3}, 17)},
                                       {"sin", random_f32({1, 3, 3}, 18)}},
                                      {{"interleaved", std::int64_t{1}}}));
}

TEST(NewerOpsPlan, Attention) {
  // 4D, causal, default scale.
  expect_plan_matches(single_op_graph("Attention",
                                      {{"q", random_f32({1, 2, 4, 8}, 19)},
                                       {"k", random_f32({1, 2, 5, 8}, 20)},
                                       {"v", random_f32({1, 2, 5, 6}, 21)}},
                                      {{"is_causal", std::int64_t{1}}}));
  // 3D, grouped key/value heads, a bool mask over fewer keys than there are (with a row
  // masked entirely: its output is 0), explicit scale.
  Tensor mask = bools({3, 4}, 22);
  for (int j = 0; j < 4; ++j) mask.values<bool>()[static_cast<std::size_t>(4 + j)] = false;
  expect_plan_matches(single_op_graph(
      "Attention",
      {{"q", random_f32({2, 3, 16}, 23)},
       {"k", random_f32({2, 6, 8}, 24)},
       {"v", random_f32({2, 6, 8}, 25)},
       {"mask", mask, true}},
      {{"q_num_heads", std::int64_t{4}}, {"kv_num_heads", std::int64_t{2}}, {"scale", 0.3F}}));
  // 4D float mask broadcast over heads, softcap.
  expect_plan_matches(single_op_graph("Attention",
                                      {{"q", random_f32({2, 2, 3, 4}, 26)},
                                       {"k", random_f32({2, 2, 3, 4}, 27)},
                                       {"v", random_f32({2, 2, 3, 4}, 28)},
                                       {"mask", random_f32({2, 1, 3, 3}, 29)}},
                                      {{"softcap", 2.0F}}));
}

// Col2Im (opset 18) is a layout primitive: fission keeps it, orchestration prices it,
// and the CPU plan executor runs it on its reference kernel.
TEST(NewerOpsPlan, Col2Im) {
  auto col2im = [](Shape x, Ints image, Ints block, Attrs attrs, std::uint64_t seed) {
    return single_op_graph(
        "Col2Im",
        {{"x", random_f32(std::move(x), seed)},
         {"image", testing::i64({static_cast<std::int64_t>(image.size())}, image), true},
         {"block", testing::i64({static_cast<std::int64_t>(block.size())}, block), true}},
        std::move(attrs), 1, 18);
  };
  // 5x5 image, 2x2 blocks at 4x4 positions, 3 channels, batch 2.
  const Graph plain = col2im({2, 12, 16}, {5, 5}, {2, 2}, {}, 31);
  EXPECT_EQ(op_types(fission(plain).graph), (std::multiset<std::string>{"Col2Im"}));
  expect_plan_matches(plain);
  // Strides, dilations and asymmetric pads: 3 x 7 positions of 2x3 blocks in a 6x7 image.
  expect_plan_matches(
      col2im({1, 12, 21}, {6, 7}, {2, 3},
             {{"strides", Ints{2, 1}}, {"dilations", Ints{2, 1}}, {"pads", Ints{1, 0, 1, 2}}}, 32));
  // One spatial axis.
  expect_plan_matches(
      col2im({1, 6, 3}, {6}, {3}, {{"strides", Ints{2}}, {"pads", Ints{1, 0}}}, 33));
}

// The opset-18 Resize forms oneDNN's resampling cannot compute (antialiased filters, and
// keep_aspect_ratio_policy's common scale, which differs from out / in when the output
// length was rounded) run on the reference kernel in plans.
TEST(NewerOpsPlan, ResizeAntialiasAndKeepAspectRatio) {
  auto resize = [](const std::string& key, Tensor value, Attrs attrs) {
    const bool by_scale = key == "scales";
    std::vector<OpInput> inputs = {{"x", random_f32({1, 2, 9, 13}, 34)}, {"", Tensor()}};
    inputs.push_back(by_scale ? OpInput{"sc", value, true} : OpInput{"", Tensor()});
    if (!by_scale) inputs.push_back({"sz", value, true});
    return single_op_graph("Resize", inputs, std::move(attrs), 1, 18);
  };
  for (const std::string mode : {"linear", "cubic"}) {
    SCOPED_TRACE(mode);
    expect_plan_matches(resize("scales", testing::f32({4}, {1, 1, 0.5F, 0.3F}),
                               {{"mode", mode}, {"antialias", std::int64_t{1}}}));
    expect_plan_matches(resize("sizes", testing::i64({4}, {1, 2, 4, 20}),
                               {{"mode", mode},
                                {"antialias", std::int64_t{1}},
                                {"exclude_outside", std::int64_t{1}},
                                {"coordinate_transformation_mode", std::string("align_corners")}}));
  }
  // 9 x 13 to at most 4 x 4: scale 4 / 13, 2.77 rows rounded to 3 (oneDNN would sample
  // at 3 / 9).
  expect_plan_matches(resize("sizes", testing::i64({2}, {4, 4}),
                             {{"mode", std::string("linear")},
                              {"axes", Ints{2, 3}},
                              {"keep_aspect_ratio_policy", std::string("not_larger")}}));
  expect_plan_matches(resize("sizes", testing::i64({2}, {4, 4}),
                             {{"mode", std::string("linear")},
                              {"axes", Ints{2, 3}},
                              {"keep_aspect_ratio_policy", std::string("not_smaller")},
                              {"antialias", std::int64_t{1}}}));
}

// Col2Im and an antialiased Resize between elementwise ops, all in one kernel: the
// stage builder runs what its fused loops cannot express on reference kernels.
TEST(NewerOpsPlan, Col2ImAndAntialiasedResizeInOneKernel) {
  const Graph g =
      runtime_test::make_graph({{"x", {1, 8, 9}}},
                               {{"image", runtime_test::i64({2}, {4, 4})},
                                {"block", runtime_test::i64({2}, {2, 2})},
                                {"half", runtime_test::f32({4}, {1, 1, 0.5F, 0.5F})},
                                {"k", runtime_test::pattern({1, 8, 9})}},
                               {{"Mul", {"x", "k"}, {"m"}},
                                {"Col2Im", {"m", "image", "block"}, {"c"}},
                                {"Resize",
                                 {"c", "", "half"},
                                 {"r"},
                                 {{"mode", std::string("cubic")}, {"antialias", std::int64_t{1}}}},
                                {"Relu", {"r"}, {"y"}}},
                               {"y"});
  PlanExecutor executor(g, runtime_test::one_kernel_plan(g), {});
  const TensorMap feed = make_random_inputs(g, 5);
  EXPECT_TRUE(testing::tensors_close(executor.run(feed).at("y"),
                                     ReferenceInterpreter(g).run(feed).at("y"), 1e-3, 1e-4));
}

TEST(NewerOpsPlan, RefusedAttentionFormsAreNamed) {
  try {
    const Graph g = single_op_graph("Attention", {{"q", random_f32({1, 2, 4, 8}, 19)},
                                                  {"k", random_f32({1, 2, 5, 8}, 20)},
                                                  {"v", random_f32({1, 2, 5, 8}, 21)},
                                                  {"", Tensor()},
                                                  {"past_k", random_f32({1, 2, 1, 8}, 22)},
                                                  {"past_v", random_f32({1, 2, 1, 8}, 23)}});
    ReferenceInterpreter(g).run(make_random_inputs(g, 1));
    ADD_FAILURE() << "past_key accepted";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("input 4 (past_key)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace orchid
