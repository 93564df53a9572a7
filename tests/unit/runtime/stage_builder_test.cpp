// A kernel cut into stages: a linear primitive with its epilogue on oneDNN, pooling on
// oneDNN, a run of elementwise primitives as one fused loop, and what neither covers on
// its reference kernel; then the same kernel executed against the reference interpreter.
// A Concat between convolutions runs on oneDNN in their layout, with no reorders.
#include <gtest/gtest.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <cmath>

#include "eval/random_inputs.hpp"
#include "eval/reference_interpreter.hpp"
#include "runtime/onednn_linear.hpp"
#include "runtime/onednn_memory.hpp"
#include "runtime/onednn_memory_bound.hpp"
#include "runtime/plan_executor.hpp"
#include "runtime/stage_builder.hpp"
#include "small_graph.hpp"

namespace orchid {
namespace {

using runtime_test::make_graph;
using runtime_test::one_kernel_plan;
using runtime_test::pattern;

void expect_matches(const TensorMap& got, const TensorMap& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, b] : want) {
    const Tensor& a = got.at(name);
    ASSERT_EQ(a.shape(), b.shape()) << name;
    for (std::int64_t i = 0; i < a.numel(); ++i) {
      ASSERT_NEAR(a.get_as_double(i), b.get_as_double(i),
                  1e-4 + 1e-3 * std::fabs(b.get_as_double(i)))
          << name << " element " << i;
    }
  }
}

// Conv + bias + Relu, MaxPool, Sigmoid * itself, Split (block copies).
Graph four_stage_graph() {
  return make_graph({{"x", {1, 3, 8, 8}}},
                    {{"w", pattern({4, 3, 3, 3})},
                     {"b", pattern({1, 4, 1, 1})},
                     {"sizes", runtime_test::i64({2}, {1, 3})}},
                    {{"Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<std::int64_t>{1, 1, 1, 1}}}},
                     {"Add", {"c", "b"}, {"cb"}},
                     {"Relu", {"cb"}, {"r"}},
                     {"MaxPool",
                      {"r"},
                      {"p"},
                      {{"kernel_shape", std::vector<std::int64_t>{2, 2}},
                       {"strides", std::vector<std::int64_t>{2, 2}}}},
                     {"Sigmoid", {"p"}, {"s"}},
                     {"Mul", {"s", "s"}, {"q"}},
                     {"Split", {"q", "sizes"}, {"y", "z"}, {{"axis", std::int64_t{1}}}}},
                    {"y", "z"});
}

TEST(StageBuilder, CutsAKernelIntoOneStageOfEachKind) {
  const Graph g = four_stage_graph();
  const Plan plan = one_kernel_plan(g);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  MemoryPlan memory(g, plan);
  PlanExecutorStats stats;
  StageBuilder builder(g, engine, memory, stats);
  const std::vector<Stage> stages = builder.build(plan.kernels.at(0));
  ASSERT_EQ(stages.size(), 4u);
  const auto* linear = std::get_if<LinearStage>(&stages[0]);
  ASSERT_NE(linear, nullptr);
  EXPECT_EQ(linear->node->op_type, "Conv");
  ASSERT_EQ(linear->post_ops.size(), 2u);
  EXPECT_EQ(linear->post_ops[0].algorithm, OnednnAlgorithm::BinaryAdd);
  EXPECT_EQ(linear->post_ops[1].algorithm, OnednnAlgorithm::EltwiseRelu);
  EXPECT_EQ(linear->dst, "r");
  EXPECT_EQ(linear->y.kind, Location::Kind::Scratch);  // handed to the next stage only
  EXPECT_TRUE(std::holds_alternative<MemoryBoundStage>(stages[1]));
  const auto* loop = std::get_if<LoopStage>(&stages[2]);
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->read_names, std::vector<std::string>{"p"});
  const auto* ref = std::get_if<ReferenceStage>(&stages[3]);
  ASSERT_NE(ref, nullptr);
  EXPECT_EQ(ref->node->op_type, "Split");
  EXPECT_TRUE(ref->block_copies);
  EXPECT_EQ(stats.dnnl_primitives, 2u);
  EXPECT_EQ(stats.epilogue_primitives, 2u);
  EXPECT_EQ(stats.fused_loops, 1u);
  EXPECT_EQ(stats.fused_loop_primitives, 2u);
  EXPECT_EQ(stats.reference_primitives, 1u);
  EXPECT_GT(memory.scratch_bytes(), 0);
}

TEST(StageBuilder, TheStagesComputeWhatTheGraphMeans) {
  const Graph g = four_stage_graph();
  const Plan plan = one_kernel_plan(g);
  PlanExecutor executor(g, plan, {});
  const TensorMap feed = make_random_inputs(g, 3);
  const TensorMap want = ReferenceInterpreter(g).run(feed);
  for (int round = 0; round < 2; ++round) {
    expect_matches(executor.run(feed), want);
  }
  EXPECT_NE(executor.describe_kernel(0).find("fused loop"), std::string::npos);
  EXPECT_NE(executor.describe_kernel(0).find("copies Split"), std::string::npos);
}

// A SqueezeNet fire module: a squeeze convolution, two expand convolutions of its result,
// their Concat, and a convolution of that; each node its own kernel, so every tensor
// passes through the arena. The Concat runs on oneDNN, reading and writing the layout the
// convolutions prefer: only the graph's plain input and output are reordered.
TEST(StageBuilder, AConcatBetweenConvolutionsKeepsTheirLayout) {
  const auto pads = std::vector<std::int64_t>{1, 1, 1, 1};
  const Graph g = make_graph({{"x", {1, 16, 8, 8}}},
                             {{"w0", pattern({16, 16, 1, 1})},
                              {"w1", pattern({16, 16, 1, 1})},
                              {"w2", pattern({16, 16, 3, 3})},
                              {"w3", pattern({16, 32, 1, 1})}},
                             {{"Conv", {"x", "w0"}, {"s"}},
                              {"Conv", {"s", "w1"}, {"e1"}},
                              {"Conv", {"s", "w2"}, {"e2"}, {{"pads", pads}}},
                              {"Concat", {"e1", "e2"}, {"c"}, {{"axis", std::int64_t{1}}}},
                              {"Conv", {"c", "w3"}, {"y"}}},
                             {"y"});
  const Plan plan = runtime_test::node_per_kernel_plan(g);
  PlanExecutor executor(g, plan, {});
  const TensorMap feed = make_random_inputs(g, 5);
  expect_matches(executor.run(feed), ReferenceInterpreter(g).run(feed));
  const std::string concat = executor.describe_kernel(3);
  EXPECT_EQ(concat.find("copies"), std::string::npos) << concat;
  EXPECT_NE(concat.find("onednn"), std::string::npos) << concat;
  EXPECT_EQ(executor.stats().reference_primitives, 0u);
  // Where oneDNN's convolutions prefer a layout other than plain on this CPU (NHWC on
  // AVX-512, nChw8c/16c on AVX2), the tensors between them stay in it.
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  if (activation_preferred_layout(engine, {1, 16, 8, 8}).has_value()) {
    for (std::size_t k : {1, 2}) {  // the expand convolutions: no reorder either side
      EXPECT_EQ(executor.describe_kernel(k).find("reorder"), std::string::npos)
          << executor.describe_kernel(k);
    }
    EXPECT_EQ(executor.describe_kernel(4).find("reorder in"), std::string::npos)
        << executor.describe_kernel(4);
  }
}

// A squeeze-and-excitation block: the global average pool of a convolution's result
// (ReduceMean over H and W) runs as oneDNN's pooling in the convolutions' layout, its
// [1, C, 1, 1] result read by the next convolution without reorders; where oneDNN's plain
// pooling is only its reference kernel, a fused loop computes it instead.
TEST(StageBuilder, ASpatialMeanRunsAsPoolingInTheConvolutionsLayout) {
  const Graph g = make_graph({{"x", {1, 16, 12, 12}}},
                             {{"w0", pattern({32, 16, 1, 1})},
                              {"w1", pattern({8, 32, 1, 1})},
                              {"w2", pattern({32, 8, 1, 1})},
                              {"w3", pattern({16, 32, 1, 1})},
                              {"axes", runtime_test::i64({2}, {-2, -1})}},
                             {{"Conv", {"x", "w0"}, {"a"}},
                              {"ReduceMean", {"a", "axes"}, {"m"}},
                              {"Conv", {"m", "w1"}, {"s1"}},
                              {"Relu", {"s1"}, {"s2"}},
                              {"Conv", {"s2", "w2"}, {"s3"}},
                              {"Sigmoid", {"s3"}, {"s4"}},
                              {"Mul", {"a", "s4"}, {"e"}},
                              {"Conv", {"e", "w3"}, {"y"}}},
                             {"y"});
  const Plan plan = runtime_test::node_per_kernel_plan(g);
  PlanExecutor executor(g, plan, {});
  const TensorMap feed = make_random_inputs(g, 6);
  expect_matches(executor.run(feed), ReferenceInterpreter(g).run(feed));
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const auto plain = make_spatial_mean(engine, g, g.nodes[1]);
  ASSERT_TRUE(plain.has_value());
  const std::string mean = executor.describe_kernel(1);
  if (plain->implementation.rfind("ref", 0) == 0) {
    EXPECT_NE(mean.find("fused loop"), std::string::npos) << mean;
    return;
  }
  EXPECT_NE(mean.find("onednn"), std::string::npos) << mean;
  EXPECT_EQ(mean.find("ref"), std::string::npos) << mean;
  if (activation_preferred_layout(engine, {1, 32, 12, 12}).has_value()) {
    // The convolution writing the pooled tensor keeps its layout, no reorder out.
    EXPECT_EQ(executor.describe_kernel(0).find("reorder out"), std::string::npos)
        << executor.describe_kernel(0);
  }
}

// A spatial mean of a value a loop computes in the same kernel (an instance norm's
// variance) stays in that loop: it reduces the value as it computes it, with no
// intermediate tensor for a pooling to read.
TEST(StageBuilder, ASpatialMeanOfALoopsValueStaysInTheLoop) {
  const Graph g =
      make_graph({{"x", {1, 8, 10, 10}}}, {{"axes", runtime_test::i64({2}, {2, 3})}},
                 {{"Mul", {"x", "x"}, {"sq"}}, {"ReduceMean", {"sq", "axes"}, {"y"}}}, {"y"});
  const Plan plan = one_kernel_plan(g);
  PlanExecutor executor(g, plan, {});
  const TensorMap feed = make_random_inputs(g, 9);
  expect_matches(executor.run(feed), ReferenceInterpreter(g).run(feed));
  EXPECT_EQ(executor.describe_kernel(0), "Mul+ReduceMean: fused loop");
}

// A loop that reduces (here a mean of squares over H and W, then a division by it) walks
// the logical order. Between convolutions that keep a channels-last or blocked layout, it
// would gather a large tensor a channel's stride apart; from 1 MiB it reads and writes plain
// copies instead, reordered by oneDNN, and still computes what the graph means.
TEST(StageBuilder, AReducingLoopBetweenConvolutionsReadsAndWritesPlainCopies) {
  const auto pads = std::vector<std::int64_t>{1, 1, 1, 1};
  const Graph g = make_graph({{"x", {1, 16, 128, 128}}},
                             {{"w0", pattern({16, 16, 3, 3})},
                              {"w1", pattern({16, 16, 3, 3})},
                              {"axes", runtime_test::i64({2}, {2, 3})}},
                             {{"Conv", {"x", "w0"}, {"a"}, {{"pads", pads}}},
                              {"Mul", {"a", "a"}, {"sq"}},
                              {"ReduceMean", {"sq", "axes"}, {"v"}},
                              {"Div", {"a", "v"}, {"n"}},
                              {"Conv", {"n", "w1"}, {"y"}, {{"pads", pads}}}},
                             {"y"});
  const PrimitiveGraphIndex index(g, {});
  const auto plan = build_plan(
      index, {}, {KernelChoice{{0}, 0.0}, KernelChoice{{1, 2, 3}, 0.0}, KernelChoice{{4}, 0.0}},
      "test");
  ASSERT_TRUE(plan.has_value());
  PlanExecutor executor(g, *plan, {});
  const TensorMap feed = make_random_inputs(g, 3);
  const TensorMap want = ReferenceInterpreter(g).run(feed);
  for (int round = 0; round < 2; ++round) expect_matches(executor.run(feed), want);
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const bool stored = activation_preferred_layout(engine, {1, 16, 128, 128}).has_value();
  EXPECT_EQ(executor.stats().plain_copy_loops, stored ? 1u : 0u);
}

// HardSwish after a convolution (MobileNetV3's activation) is one oneDNN post-op, not a
// fused loop re-reading the convolution's result, and computes what the graph means.
TEST(StageBuilder, HardSwishFoldsIntoTheConvolution) {
  const Graph g =
      make_graph({{"x", {1, 8, 6, 6}}},
                 {{"w", pattern({16, 8, 3, 3})},
                  {"sixth", runtime_test::f32({}, {1.0f / 6})},
                  {"half", runtime_test::f32({}, {0.5f})},
                  {"zero", runtime_test::f32({}, {0.0f})},
                  {"one", runtime_test::f32({}, {1.0f})}},
                 {{"Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<std::int64_t>{1, 1, 1, 1}}}},
                  {"Mul", {"c", "sixth"}, {"a"}},
                  {"Add", {"a", "half"}, {"b"}},
                  {"Clip", {"b", "zero", "one"}, {"h"}},
                  {"Mul", {"c", "h"}, {"y"}}},
                 {"y"});
  const Plan plan = one_kernel_plan(g);  // the executor keeps a reference to it
  PlanExecutor executor(g, plan, {});
  TensorMap feed = make_random_inputs(g, 7);
  for (float& v : feed.at("x").values<float>()) v *= 300.0f;  // reach both clip bounds
  expect_matches(executor.run(feed), ReferenceInterpreter(g).run(feed));
  EXPECT_EQ(executor.describe_kernel(0).find("fused loop"), std::string::npos)
      << executor.describe_kernel(0);
}

// A Concat of plain tensors runs as block copies (oneDNN's plain concatenation was 5x
// slower than memcpy), in pieces both threads share; one of many short runs (along a short
// last axis) stays on oneDNN. Both give the reference's elements.
TEST(StageBuilder, APlainConcatIsBlockCopies) {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const Graph g =
      make_graph({{"a", {1, 4, 16, 16}}, {"b", {1, 1, 16, 16}}, {"c", {1, 80, 16, 16}}}, {},
                 {{"Concat", {"a", "b", "c"}, {"y"}, {{"axis", std::int64_t{1}}}}}, {"y"});
  const auto op = make_concat(engine, g, g.nodes[0]);
  ASSERT_TRUE(op);
  EXPECT_EQ(op->implementation, "block copies");
  // c's 80 KiB in one piece per source: 3 copies.
  ASSERT_EQ(op->copies.size(), 3u);
  EXPECT_EQ(op->copies[2].to, 5 * 16 * 16 * 4);
  const Plan plan = one_kernel_plan(g);
  PlanExecutor executor(g, plan, {});
  const TensorMap feed = make_random_inputs(g, 4);
  expect_matches(executor.run(feed), ReferenceInterpreter(g).run(feed));

  const Graph rows =
      make_graph({{"a", {64, 3}}, {"b", {64, 5}}}, {},
                 {{"Concat", {"a", "b"}, {"y"}, {{"axis", std::int64_t{-1}}}}}, {"y"});
  const auto short_runs = make_concat(engine, rows, rows.nodes[0]);
  ASSERT_TRUE(short_runs);
  EXPECT_TRUE(short_runs->copies.empty());
  EXPECT_NE(short_runs->implementation, "block copies");
  const Plan rows_plan = one_kernel_plan(rows);
  PlanExecutor rows_executor(rows, rows_plan, {});
  const TensorMap rows_feed = make_random_inputs(rows, 5);
  expect_matches(rows_executor.run(rows_feed), ReferenceInterpreter(rows).run(rows_feed));
}

// A MaxPool of channels-last tensors (padded, ceil mode: a last window partly outside):
// oneDNN's AVX-512 kernel, or orchid's window max where oneDNN has only slower ones (AVX2,
// as the ctest run with ONEDNN_MAX_CPU_ISA=AVX2 has it). Either gives the reference's
// elements.
TEST(StageBuilder, AMaxPoolOverChannelsLastTensorsMatchesTheReference) {
  const Graph g = make_graph({{"x", {2, 24, 11, 11}}}, {},
                             {{"MaxPool",
                               {"x"},
                               {"y"},
                               {{"kernel_shape", std::vector<std::int64_t>{3, 3}},
                                {"strides", std::vector<std::int64_t>{2, 2}},
                                {"pads", std::vector<std::int64_t>{1, 0, 1, 0}},
                                {"ceil_mode", std::int64_t{1}}}}},
                             {"y"});
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const Shape ys = g.tensor("y").shape;
  MemoryBoundLayouts layouts;
  layouts.srcs = {nhwc_desc({2, 24, 11, 11})};
  layouts.dst = nhwc_desc(to_dims(ys));
  auto op = make_pool(engine, g, g.nodes[0], layouts);
  ASSERT_TRUE(op);
  EXPECT_EQ(op->window_max.has_value(), op->implementation == "window max");
  if (!op->window_max) {
    EXPECT_NE(op->implementation.find("avx512"), std::string::npos);
  }
  const TensorMap feed = make_random_inputs(g, 9);
  const Tensor want = ReferenceInterpreter(g).run(feed).at("y");
  // NCHW <-> NHWC by the stored layouts' element offsets.
  const StoredLayout in = stored_layout(*layouts.srcs[0]), out = stored_layout(*layouts.dst);
  std::vector<float> x(in.offsets.size()), y(out.offsets.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[in.offsets[i]] = feed.at("x").data<float>()[i];
  const void* xs[] = {x.data()};
  op->run(stream, xs, y.data());
  stream.wait();
  for (std::size_t i = 0; i < y.size(); ++i) {
    ASSERT_EQ(y[out.offsets[i]], want.data<float>()[i]) << "element " << i;
  }
}

// A Transpose that is a whole kernel runs as oneDNN's reorder (the source read through
// permuted strides), and gives exactly the reference's elements.
TEST(StageBuilder, ALoneTransposeIsOneDnnsReorder) {
  const std::vector<std::pair<Shape, std::vector<std::int64_t>>> cases{
      {{2, 3, 4, 5}, {0, 2, 3, 1}}, {{1, 50, 64}, {0, 2, 1}}, {{6, 7}, {1, 0}}};
  for (const auto& [shape, perm] : cases) {
    const Graph g =
        make_graph({{"x", shape}}, {}, {{"Transpose", {"x"}, {"y"}, {{"perm", perm}}}}, {"y"});
    const Plan plan = one_kernel_plan(g);
    PlanExecutor executor(g, plan, {});
    const TensorMap feed = make_random_inputs(g, 8);
    const TensorMap got = executor.run(feed);
    const TensorMap want = ReferenceInterpreter(g).run(feed);
    ASSERT_EQ(got.at("y").shape(), want.at("y").shape());
    for (std::int64_t e = 0; e < want.at("y").numel(); ++e) {
      ASSERT_EQ(got.at("y").get_as_double(e), want.at("y").get_as_double(e)) << "element " << e;
    }
    EXPECT_NE(executor.describe_kernel(0).find("onednn"), std::string::npos)
        << executor.describe_kernel(0);
  }
}

// A kernel that ends in reshapes of a MatMul's result (heads split after a projection):
// the MatMul writes the last reshape's result itself, one stage and no copy. A kernel whose
// reshaped value is also its output keeps the copy.
TEST(StageBuilder, ReshapesEndingAMatMulKernelAreViewsOfItsResult) {
  const Graph g = make_graph({{"x", {1, 8, 32}}},
                             {{"w", pattern({32, 32})},
                              {"b", pattern({32})},
                              {"heads", runtime_test::i64({4}, {1, 8, 4, 8})},
                              {"flat", runtime_test::i64({2}, {8, 32})}},
                             {{"MatMul", {"x", "w"}, {"m"}},
                              {"Add", {"m", "b"}, {"q"}},
                              {"Reshape", {"q", "heads"}, {"h"}},
                              {"Reshape", {"h", "flat"}, {"y"}}},
                             {"y"});
  const TensorMap feed = make_random_inputs(g, 3);
  // The one-kernel plan of `graph` against the reference: its stages, in words.
  auto one_kernel = [&](const Graph& graph, std::size_t& epilogue_primitives) {
    const Plan plan = one_kernel_plan(graph);
    PlanExecutor executor(graph, plan, {});
    expect_matches(executor.run(feed), ReferenceInterpreter(graph).run(feed));
    epilogue_primitives = executor.stats().epilogue_primitives;
    return executor.describe_kernel(0);
  };
  std::size_t epilogue = 0;
  const std::string views = one_kernel(g, epilogue);
  EXPECT_EQ(views.find("fused loop"), std::string::npos) << views;
  EXPECT_EQ(epilogue, 1u);  // the bias; the reshapes are views
  Graph both = g;
  both.outputs = {"h", "y"};  // the first reshape is an output too: stored on its own
  const std::string copies = one_kernel(both, epilogue);
  EXPECT_NE(copies.find("fused loop"), std::string::npos) << copies;
}

// GPT-2's MLP: Gemm, Reshape to [1, S, 4E], tanh-GELU. The Reshape relabels the MatMul's
// result, so the GELU is its post-op: one oneDNN primitive, no fused loop, the reference's
// values.
TEST(StageBuilder, AReshapeBetweenAMatMulAndItsActivationIsPassed) {
  auto constants = runtime_test::gelu_tanh_constants();
  constants.emplace_back("w", pattern({16, 24}));
  constants.emplace_back("to3d", runtime_test::i64({3}, {1, 6, 24}));
  std::vector<runtime_test::NodeSpec> nodes{{"MatMul", {"x", "w"}, {"m"}},
                                            {"Reshape", {"m", "to3d"}, {"r"}}};
  for (const auto& n : runtime_test::gelu_tanh_nodes("r", "y")) nodes.push_back(n);
  const Graph g = make_graph({{"x", {6, 16}}}, constants, nodes, {"y"});
  const Plan plan = one_kernel_plan(g);
  PlanExecutor executor(g, plan, {});
  const TensorMap feed = make_random_inputs(g, 5);
  expect_matches(executor.run(feed), ReferenceInterpreter(g).run(feed));
  const std::string how = executor.describe_kernel(0);
  EXPECT_EQ(how.find("fused loop"), std::string::npos) << how;
  EXPECT_EQ(executor.stats().epilogue_primitives, 8u);  // the GELU's nodes, not the Reshape
}

// NHWC <-> NCHW transposes on each side of a convolution (a vision transformer's tokens
// turned into an image and back, passes/token_transposes.hpp), each its own kernel: the
// transposes are oneDNN reorders into and out of the layout the convolution keeps, so the
// convolution itself reorders nothing.
TEST(StageBuilder, TransposesBesideAConvolutionWriteAndReadItsLayout) {
  const Graph g = make_graph(
      {{"x", {1, 8, 8, 16}}}, {{"w", pattern({16, 16, 1, 1})}},
      {{"Transpose", {"x"}, {"image"}, {{"perm", std::vector<std::int64_t>{0, 3, 1, 2}}}},
       {"Conv", {"image", "w"}, {"c"}},
       {"Transpose", {"c"}, {"y"}, {{"perm", std::vector<std::int64_t>{0, 2, 3, 1}}}}},
      {"y"});
  const Plan plan = runtime_test::node_per_kernel_plan(g);
  PlanExecutor executor(g, plan, {});
  const TensorMap feed = make_random_inputs(g, 6);
  expect_matches(executor.run(feed), ReferenceInterpreter(g).run(feed));
  for (std::size_t k : {0, 2}) {
    EXPECT_NE(executor.describe_kernel(k).find("onednn"), std::string::npos)
        << executor.describe_kernel(k);
  }
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  if (activation_preferred_layout(engine, {1, 16, 8, 8}).has_value()) {
    EXPECT_EQ(executor.describe_kernel(1).find("reorder"), std::string::npos)
        << executor.describe_kernel(1);
  }
}

TEST(StageBuilder, ALinearOpOneDnnCannotRunGoesToItsReferenceKernel) {
  // A 1-D convolution (3-D tensors): not a 2-D Conv, so no oneDNN linear stage.
  const Graph g = make_graph({{"x", {1, 2, 9}}}, {{"w", pattern({3, 2, 3})}},
                             {{"Conv", {"x", "w"}, {"y"}}}, {"y"});
  const Plan plan = one_kernel_plan(g);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  MemoryPlan memory(g, plan);
  PlanExecutorStats stats;
  const std::vector<Stage> stages = StageBuilder(g, engine, memory, stats).build(plan.kernels[0]);
  ASSERT_EQ(stages.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<ReferenceStage>(stages[0]));
  EXPECT_EQ(stats.reference_primitives, 1u);
}

}  // namespace
}  // namespace orchid
