// Packed weights: shared between executors of one graph, and originals that an executor
// reads only packed handed back to the graph's owner, who may drop them. Outputs must
// stay those of the reference interpreter (|d| <= 1e-4 + 1e-3 |ref|) after the drop.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>

#include "eval/reference_interpreter.hpp"
#include "runtime/plan_executor.hpp"
#include "small_graph.hpp"

namespace orchid {
namespace {

using runtime_test::make_graph;
using runtime_test::one_kernel_plan;
using runtime_test::pattern;

// Conv (weights read only packed) then MatMul whose weights a fused Add also reads.
Graph conv_and_matmul() {
  return make_graph(
      {{"x", {1, 8, 6, 6}}},
      {{"w", pattern({16, 8, 3, 3})}, {"m", pattern({6, 6})}, {"bias", pattern({1, 16, 1, 1})}},
      {{"Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<std::int64_t>{1, 1, 1, 1}}}},
       {"Add", {"c", "bias"}, {"cb"}},
       {"MatMul", {"cb", "m"}, {"y"}},
       {"Add", {"y", "m"}, {"z"}}},
      {"z"});
}

void expect_close(const Tensor& have, const Tensor& want) {
  ASSERT_EQ(have.shape(), want.shape());
  for (std::int64_t i = 0; i < want.numel(); ++i) {
    const double a = have.get_as_double(i), b = want.get_as_double(i);
    ASSERT_LE(std::fabs(a - b), 1e-4 + 1e-3 * std::fabs(b)) << "element " << i;
  }
}

TEST(PackedWeights, SameWeightAndLayoutPackedOnce) {
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const Tensor w = pattern({16, 8});
  const dnnl::memory::desc plain({16, 8}, dnnl::memory::data_type::f32,
                                 dnnl::memory::format_tag::ab);
  const dnnl::memory::desc transposed({16, 8}, dnnl::memory::data_type::f32,
                                      dnnl::memory::format_tag::ba);
  PackedWeights packing;
  auto first = packing.get(engine, stream, "w", w, plain, transposed);
  auto again = packing.get(engine, stream, "w", w, plain, transposed);
  EXPECT_EQ(first.get(), again.get());
  EXPECT_EQ(static_cast<const float*>(first->get_data_handle())[1], w.data<float>()[8]);
  // Another layout is another copy; a copy nobody holds any more is packed afresh.
  auto other = packing.get(engine, stream, "w", w, plain, plain);
  EXPECT_NE(other.get(), first.get());
  first.reset();
  again.reset();
  auto fresh = packing.get(engine, stream, "w", w, plain, transposed);
  EXPECT_EQ(static_cast<const float*>(fresh->get_data_handle())[1], w.data<float>()[8]);
}

TEST(PackedWeights, ExecutorReleasesOnlyWeightsReadPacked) {
  Graph g = conv_and_matmul();
  const Plan plan = one_kernel_plan(g);
  const TensorMap feed{{"x", pattern({1, 8, 6, 6})}};
  const Tensor want = ReferenceInterpreter(g).run(feed).at("z");

  std::vector<std::string> released;
  PlanExecutorOptions options;
  options.release_weight = [&](const std::string& w) {
    released.push_back(w);
    EXPECT_TRUE(g.release_constant(w, g.tensor(w).data.get()));
  };
  PlanExecutor executor(g, plan, {}, options);
  // The conv weights are read only packed; the MatMul's are read by the Add too, and the
  // bias is a post-op operand: both stay.
  EXPECT_EQ(released, std::vector<std::string>{"w"});
  EXPECT_EQ(g.tensor("w").data->raw(), nullptr);
  EXPECT_NE(g.tensor("m").data->raw(), nullptr);
  EXPECT_GT(executor.stats().released_weight_bytes, 0);
  for (int round = 0; round < 2; ++round) expect_close(executor.run(feed).at("z"), want);
}

TEST(PackedWeights, SharedPackingAndReleaseAfterBuild) {
  Graph g = conv_and_matmul();
  const Plan plan = one_kernel_plan(g);
  const TensorMap feed{{"x", pattern({1, 8, 6, 6})}};
  const Tensor want = ReferenceInterpreter(g).run(feed).at("z");
  PackedWeights packing;
  PlanExecutorOptions shared;
  shared.packing = &packing;
  auto a = std::make_unique<PlanExecutor>(g, plan, std::map<std::string, std::string>{}, shared);
  PlanExecutor b(g, plan, {}, shared);
  a.reset();  // the copy b uses outlives a
  std::vector<std::string> released;
  b.release_packed_weights([&](const std::string& w) {
    released.push_back(w);
    g.release_constant(w, g.tensor(w).data.get());
  });
  EXPECT_EQ(released, std::vector<std::string>{"w"});
  expect_close(b.run(feed).at("z"), want);
}

// A packing that holds the graph's weights drops an original once an executor reads it
// only packed; an executor built later that reads it plain gets it back, rebuilt from the
// packed copy bit for bit, and keeps it while it lives: a third executor reading it only
// packed cannot drop it until then.
TEST(PackedWeights, HeldWeightsAreDroppedOnceAndRestoredForAPlainReader) {
  Graph g = conv_and_matmul();
  const Tensor original = *g.tensor("w").data;
  const TensorMap feed{{"x", pattern({1, 8, 6, 6})}};
  const Tensor want = ReferenceInterpreter(g).run(feed).at("z");
  const Plan packed_only = one_kernel_plan(g);
  PackedWeights packing;
  packing.hold_weights_of(&g);
  PlanExecutorOptions shared;
  shared.packing = &packing;
  PlanExecutor a(g, packed_only, {}, shared);
  EXPECT_TRUE(packing.released("w"));
  EXPECT_FALSE(packing.released("m"));  // a fused Add reads it plain too
  EXPECT_EQ(g.tensor("w").data->raw(), nullptr);
  EXPECT_GT(a.stats().released_weight_bytes, 0);
  expect_close(a.run(feed).at("z"), want);

  // A node appended after the fact reads the weights plain (plan indices stay valid); only
  // b's plan holds it.
  Node square;
  square.name = "square";
  square.op_type = "Mul";
  square.inputs = {"w", "w"};
  square.outputs = {"w2"};
  g.nodes.push_back(square);
  g.set_type("w2", DType::F32, {16, 8, 3, 3});  // computed by b's kernel, not an output
  const Plan plain_too = one_kernel_plan(g);
  auto b =
      std::make_unique<PlanExecutor>(g, plain_too, std::map<std::string, std::string>{}, shared);
  ASSERT_FALSE(packing.released("w"));
  const Tensor& restored = *g.tensor("w").data;
  ASSERT_NE(restored.raw(), nullptr);
  EXPECT_EQ(std::memcmp(restored.raw(), original.raw(), original.nbytes()), 0);
  expect_close(b->run(feed).at("z"), want);
  expect_close(a.run(feed).at("z"), want);

  PlanExecutor c(g, packed_only, {}, shared);  // b still reads it plain
  EXPECT_FALSE(packing.released("w"));
  EXPECT_EQ(c.stats().released_weight_bytes, 0);
  b.reset();
  PlanExecutor d(g, packed_only, {}, shared);
  EXPECT_TRUE(packing.released("w"));
  for (PlanExecutor* e : {&a, &c, &d}) expect_close(e->run(feed).at("z"), want);
}

TEST(GraphRelease, OnlyTheExpectedValue) {
  Graph g = conv_and_matmul();
  const Tensor* w = g.tensor("w").data.get();
  EXPECT_FALSE(g.release_constant("w", g.tensor("m").data.get()));
  EXPECT_FALSE(g.release_constant("nonexistent", w));
  EXPECT_EQ(g.tensor("w").data.get(), w);
  EXPECT_TRUE(g.release_constant("w", w));
  EXPECT_TRUE(g.is_constant("w"));
  EXPECT_EQ(g.tensor("w").data->shape(), (Shape{16, 8, 3, 3}));
  EXPECT_EQ(g.tensor("w").data->raw(), nullptr);
}

}  // namespace
}  // namespace orchid
