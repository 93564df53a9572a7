// Results written over the residual their convolution adds last: the arena places the
// two in one block only where that is safe (the residual read by the post-op alone, by no
// later kernel), the convolution then adds it as a sum post-op where the layouts allow,
// and the plan computes what the reference interpreter does (|d| <= 1e-5 + 1e-4 |ref|).
#include <gtest/gtest.h>

#include <cmath>

#include "eval/random_inputs.hpp"
#include "eval/reference_interpreter.hpp"
#include "orchestrate/plan.hpp"
#include "runtime/in_place_residuals.hpp"
#include "runtime/onednn_linear.hpp"
#include "runtime/plan_executor.hpp"
#include "small_graph.hpp"

namespace orchid {
namespace {

using runtime_test::make_graph;
using runtime_test::NodeSpec;
using runtime_test::pattern;

// A bottleneck's end: shortcut r = Conv(x) (kernel 0), h = Relu(Conv(x)) (kernel 1), then
// y = Relu(Conv(h) + b + r) (kernel 2); `more` nodes after it, as kernels of their own.
Plan bottleneck_plan(const Graph& g) {
  std::vector<KernelChoice> kernels{{{0}, 0}, {{1, 2}, 0}, {{3, 4, 5, 6}, 0}};
  for (std::size_t n = 7; n < g.nodes.size(); ++n) kernels.push_back({{n}, 0});
  const PrimitiveGraphIndex index(g, {});
  auto plan = build_plan(index, {}, kernels, "test");
  if (!plan) internal_error("bottleneck plan cannot be scheduled");
  return *plan;
}

Graph bottleneck(std::vector<NodeSpec> more, std::vector<std::string> outputs,
                 const std::string& conv_source = "h2") {
  std::vector<NodeSpec> nodes{{"Conv", {"x", "wd"}, {"r"}}, {"Conv", {"x", "w1"}, {"h"}},
                              {"Relu", {"h"}, {"h2"}},      {"Conv", {conv_source, "w2"}, {"c"}},
                              {"Add", {"c", "b2"}, {"cb"}}, {"Add", {"cb", "r"}, {"s"}},
                              {"Relu", {"s"}, {"y"}}};
  nodes.insert(nodes.end(), more.begin(), more.end());
  return make_graph({{"x", {1, 16, 10, 10}}},
                    {{"wd", pattern({32, 16, 1, 1})},
                     {"w1", pattern({16, 16, 1, 1})},
                     {"w2", pattern({32, conv_source == "h2" ? 16 : 32, 1, 1})},
                     {"b2", pattern({1, 32, 1, 1})},
                     {"w3", pattern({8, 32, 3, 3})}},
                    nodes, outputs);
}

std::int64_t offset_of(const ArenaLayout& a, const std::string& t) {
  for (const auto& s : a.slots) {
    if (s.tensor == t) return s.offset;
  }
  ADD_FAILURE() << "no slot for " << t;
  return -1;
}

void expect_matches_reference(const Graph& g, const Plan& plan, std::size_t want_summed) {
  PlanExecutor executor(g, plan, {});
  const TensorMap feed = make_random_inputs(g, 5);
  const TensorMap want = ReferenceInterpreter(g).run(feed);
  for (int round = 0; round < 2; ++round) {  // the second run reads what the first left
    const TensorMap got = executor.run(feed);
    for (const auto& [name, w] : want) {
      for (std::int64_t i = 0; i < w.numel(); ++i) {
        const double a = got.at(name).get_as_double(i), b = w.get_as_double(i);
        ASSERT_LE(std::fabs(a - b), 1e-5 + 1e-4 * std::fabs(b)) << name << "[" << i << "]";
      }
    }
  }
  EXPECT_EQ(executor.stats().summed_residuals, want_summed);
}

TEST(InPlaceResiduals, AResultFollowedByAConvolutionIsSummedOverItsResidual) {
  const Graph g = bottleneck(
      {{"Conv", {"y", "w3"}, {"z"}, {{"pads", std::vector<std::int64_t>{1, 1, 1, 1}}}}}, {"z"});
  const Plan plan = bottleneck_plan(g);
  const ArenaLayout a = in_place_residuals(g, plan);
  EXPECT_EQ(a.in_place_kernels.size(), 1u);
  EXPECT_EQ(offset_of(a, "y"), offset_of(a, "r"));
  EXPECT_LE(a.bytes, plan.arena_bytes);
  // A sum where the convolutions keep a layout of their own between them (NHWC here).
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const bool kept = conv_preferred_layouts(engine, g, g.nodes[3]).has_value();
  expect_matches_reference(g, plan, kept ? 1 : 0);
}

TEST(InPlaceResiduals, AGraphOutputOverItsResidualStaysABinaryPostOpReadInPlace) {
  const Graph g = bottleneck({}, {"y"});
  const Plan plan = bottleneck_plan(g);
  const ArenaLayout a = in_place_residuals(g, plan);
  EXPECT_EQ(a.in_place_kernels.size(), 1u);
  EXPECT_EQ(offset_of(a, "y"), offset_of(a, "r"));
  expect_matches_reference(g, plan, 0);  // y is plain, the convolution's result NHWC
}

TEST(InPlaceResiduals, NotWhereTheResidualIsReadAgain) {
  // Read by a later kernel (a graph output too).
  const Graph later = bottleneck({}, {"y", "r"});
  EXPECT_EQ(in_place_residuals(later, bottleneck_plan(later)).in_place_kernels.size(), 0u);
  // The convolution's own source: y = Relu(Conv(r) + b + r) would overwrite what it reads.
  const Graph own = bottleneck({}, {"y"}, "r");
  const Plan plan = bottleneck_plan(own);
  const ArenaLayout a = in_place_residuals(own, plan);
  EXPECT_EQ(a.in_place_kernels.size(), 0u);
  EXPECT_NE(offset_of(a, "y"), offset_of(a, "r"));
  expect_matches_reference(own, plan, 0);
}

// The residual added after a SiLU: oneDNN's AVX2 convolutions take a sum only as the
// first post-op (below AVX-512 the sum left its reference kernel, 100x slower), so there
// it stays a binary post-op. Checked by ctest's ONEDNN_MAX_CPU_ISA=AVX2 run as well.
TEST(InPlaceResiduals, NoSumThatLeavesOnlyOneDnnsReferenceKernel) {
  std::vector<NodeSpec> nodes{
      {"Conv", {"x", "wd"}, {"r"}},
      {"Conv", {"x", "w1"}, {"h"}},
      {"Relu", {"h"}, {"h2"}},
      {"Conv", {"h2", "w2"}, {"c"}},
      {"Add", {"c", "b2"}, {"cb"}},
      {"Sigmoid", {"cb"}, {"sg"}},
      {"Mul", {"cb", "sg"}, {"silu"}},
      {"Add", {"silu", "r"}, {"y"}},
      {"Conv", {"y", "w3"}, {"z"}, {{"pads", std::vector<std::int64_t>{1, 1, 1, 1}}}}};
  const Graph g = make_graph({{"x", {1, 16, 10, 10}}},
                             {{"wd", pattern({32, 16, 1, 1})},
                              {"w1", pattern({16, 16, 1, 1})},
                              {"w2", pattern({32, 16, 1, 1})},
                              {"b2", pattern({1, 32, 1, 1})},
                              {"w3", pattern({8, 32, 3, 3})}},
                             nodes, {"z"});
  const PrimitiveGraphIndex index(g, {});
  const auto plan =
      build_plan(index, {}, {{{0}, 0}, {{1, 2}, 0}, {{3, 4, 5, 6, 7}, 0}, {{8}, 0}}, "test");
  ASSERT_TRUE(plan);
  EXPECT_EQ(in_place_residuals(g, *plan).in_place_kernels.size(), 1u);
  PlanExecutor executor(g, *plan, {});
  for (std::size_t k = 0; k < plan->kernels.size(); ++k) {
    EXPECT_EQ(executor.describe_kernel(k).find("ref:"), std::string::npos)
        << executor.describe_kernel(k);
  }
  expect_matches_reference(g, *plan, executor.stats().summed_residuals);
}

TEST(ArenaOffsets, AGroupSharesOneOffsetAndOverlapsNothingLiveBesideIt) {
  std::vector<ArenaSlot> slots{
      {"a", 0, 128, 0, 2}, {"b", 0, 128, 2, 4}, {"c", 0, 64, 1, 3}, {"d", 0, 256, 5, 6}};
  const std::int64_t peak = assign_arena_offsets(slots, {{0, 1}});
  EXPECT_EQ(slots[0].offset, slots[1].offset);
  // c lives while the block of a and b does: no shared bytes.
  const bool apart =
      slots[2].offset + 64 <= slots[0].offset || slots[0].offset + 128 <= slots[2].offset;
  EXPECT_TRUE(apart);
  EXPECT_EQ(peak, 256);  // d alone later
}

}  // namespace
}  // namespace orchid
