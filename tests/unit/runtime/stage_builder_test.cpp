// A kernel cut into stages: a linear primitive with its epilogue on oneDNN, pooling on
// oneDNN, a run of elementwise primitives as one fused loop, and what neither covers on
// its reference kernel; then the same kernel executed against the reference interpreter.
#include <gtest/gtest.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <cmath>

#include "eval/random_inputs.hpp"
#include "eval/reference_interpreter.hpp"
#include "runtime/plan_executor.hpp"
#include "runtime/stage_builder.hpp"
#include "small_graph.hpp"

namespace orchid {
namespace {

using runtime_test::make_graph;
using runtime_test::one_kernel_plan;
using runtime_test::pattern;

// Conv + bias + Relu, MaxPool, Sigmoid * itself, Concat.
Graph four_stage_graph() {
  return make_graph({{"x", {1, 3, 8, 8}}},
                    {{"w", pattern({4, 3, 3, 3})}, {"b", pattern({1, 4, 1, 1})}},
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
                     {"Concat", {"q", "q"}, {"y"}, {{"axis", std::int64_t{1}}}}},
                    {"y"});
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
  EXPECT_TRUE(std::holds_alternative<UnaryDnnlStage>(stages[1]));
  const auto* loop = std::get_if<LoopStage>(&stages[2]);
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->read_names, std::vector<std::string>{"p"});
  const auto* ref = std::get_if<ReferenceStage>(&stages[3]);
  ASSERT_NE(ref, nullptr);
  EXPECT_EQ(ref->node->op_type, "Concat");
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
    const TensorMap got = executor.run(feed);
    const Tensor& a = got.at("y");
    const Tensor& b = want.at("y");
    ASSERT_EQ(a.shape(), b.shape());
    for (std::int64_t i = 0; i < a.numel(); ++i) {
      ASSERT_NEAR(a.get_as_double(i), b.get_as_double(i),
                  1e-4 + 1e-3 * std::fabs(b.get_as_double(i)))
          << "element " << i;
    }
  }
  EXPECT_NE(executor.describe_kernel(0).find("fused loop"), std::string::npos);
  EXPECT_NE(executor.describe_kernel(0).find("copies Concat"), std::string::npos);
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
