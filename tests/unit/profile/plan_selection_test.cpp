// Plan selection by end-to-end timing: greedy fusion is always a candidate, no plan is
// timed twice, every candidate gets its rounds, the fastest median is kept, and every
// ranked plan computes the reference interpreter's outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "cost/cost_model.hpp"
#include "cost/device_spec.hpp"
#include "eval/random_inputs.hpp"
#include "eval/reference_interpreter.hpp"
#include "op_test_util.hpp"
#include "orchestrate/orchestrator.hpp"
#include "passes/load_model.hpp"
#include "profile/cpu_environment.hpp"
#include "profile/plan_selection.hpp"
#include "runtime/plan_executor.hpp"
#include "test_config_roots.hpp"

namespace orchid {
namespace {

TEST(PlanSelection, TimesRankedPlansAndGreedyAndKeepsTheFastest) {
  const LoadedModel loaded = load_model(std::string(ORCHID_MODELS_DIR) + "/tiny_attention.onnx");
  const auto model = make_analytic_cost_model(load_device_spec("cpu", test::source_configs()));
  OrchestrateOptions options;
  options.k_best = 3;
  const Orchestration o = orchestrate(loaded.graph, *model, options);
  const std::vector<const Plan*> candidates = plan_candidates(o);
  ASSERT_GE(candidates.size(), 2u);
  const bool greedy_is_ranked = std::any_of(o.ranked.begin(), o.ranked.end(), [&](const Plan& p) {
    return p.kernels.size() == o.greedy.kernels.size() &&
           std::equal(
               p.kernels.begin(), p.kernels.end(), o.greedy.kernels.begin(),
               [](const PlannedKernel& a, const PlannedKernel& b) { return a.nodes == b.nodes; });
  });
  EXPECT_EQ(candidates.back()->kind == "greedy-fusion", !greedy_is_ranked);
  EXPECT_EQ(candidates.size(), o.ranked.size() + (greedy_is_ranked ? 0 : 1));

  const TensorMap feed = make_random_inputs(loaded.graph, 0);
  const TensorMap expected = ReferenceInterpreter(loaded.graph).run(feed);
  for (const Plan* p : candidates) {
    PlanExecutor executor(o.fission.graph, *p, o.fission.alternatives);
    const TensorMap got = executor.run(feed);
    for (const auto& [name, value] : expected) {
      EXPECT_TRUE(testing::tensors_close(got.at(name), value, 1e-4, 1e-4))
          << p->kind << " output " << name;
    }
  }

  // Without ranked plans the optimum stands for them.
  const Orchestration single = orchestrate(loaded.graph, *model);
  const std::vector<const Plan*> two = plan_candidates(single);
  ASSERT_FALSE(two.empty());
  EXPECT_EQ(two.front()->kind, "optimal");

  for (const std::int64_t interleave_bytes : {std::int64_t{1} << 40, std::int64_t{0}}) {
    PlanSelectionOptions so;
    so.budget_seconds = 0.05;
    so.min_rounds = 3;
    so.max_rounds = 5;
    so.interleave_bytes = interleave_bytes;
    const PlanSelection s =
        select_fastest_plan(o.fission.graph, o.fission.alternatives, candidates, feed, so);
    EXPECT_EQ(s.interleaved, interleave_bytes > 0);
    ASSERT_EQ(s.trials.size(), candidates.size());
    for (std::size_t k = 0; k < s.trials.size(); ++k) {
      EXPECT_EQ(s.trials[k].kind, candidates[k]->kind);
      EXPECT_GE(s.trials[k].times_ms.size(), 3u);
      EXPECT_LE(s.trials[k].times_ms.size(), 5u);
      EXPECT_GE(s.trials[s.fastest].median_ms, 0.0);
      EXPECT_LE(s.trials[s.fastest].median_ms, s.trials[k].median_ms);
    }
  }
}

// Candidates timed in turns share one block for their arenas and pools. A later, larger
// executor replaces the block: an earlier one follows it on its next run (same outputs as
// the reference), and refuses to hand out the outputs the replaced block held.
TEST(PlanSelection, CandidatesShareOneBlockOfMemoryAndFollowItWhenItGrows) {
  const auto model = make_analytic_cost_model(load_device_spec("cpu", test::source_configs()));
  const LoadedModel small = load_model(std::string(ORCHID_MODELS_DIR) + "/tiny_mlp.onnx");
  const LoadedModel large = load_model(std::string(ORCHID_MODELS_DIR) + "/tiny_attention.onnx");
  OrchestrateOptions options;
  options.k_best = 2;
  const Orchestration os = orchestrate(small.graph, *model, options);
  const Orchestration ol = orchestrate(large.graph, *model, options);
  const TensorMap small_feed = make_random_inputs(small.graph, 1);
  const TensorMap large_feed = make_random_inputs(large.graph, 2);
  const TensorMap small_want = ReferenceInterpreter(small.graph).run(small_feed);
  const TensorMap large_want = ReferenceInterpreter(large.graph).run(large_feed);
  auto expect_matches = [](const TensorMap& got, const TensorMap& want, const char* what) {
    for (const auto& [name, value] : want) {
      EXPECT_TRUE(testing::tensors_close(got.at(name), value, 1e-4, 1e-4)) << what << " " << name;
    }
  };

  PlanExecutorOptions shared;
  shared.memory = std::make_shared<SharedExecutorMemory>();
  PlanExecutor a(os.fission.graph, os.optimal, os.fission.alternatives, shared);
  const std::uint64_t first = shared.memory->generation();
  expect_matches(a.run(small_feed), small_want, "small, alone");
  PlanExecutor b(ol.fission.graph, ol.optimal, ol.fission.alternatives, shared);
  PlanExecutor c(ol.fission.graph, *plan_candidates(ol).back(), ol.fission.alternatives, shared);
  ASSERT_GT(b.stats().arena_bytes, a.stats().arena_bytes);
  EXPECT_NE(shared.memory->generation(), first);  // grown for b
  EXPECT_THROW(a.outputs(), InternalError);
  // One block of the largest one's arena and pools, not the sum.
  const auto held = [](const PlanExecutorStats& s) {
    return AlignedBuffer::round_up(s.arena_bytes) + AlignedBuffer::round_up(s.scratch_bytes) +
           AlignedBuffer::round_up(s.layout_bytes) + s.loop_buffer_bytes;
  };
  EXPECT_EQ(shared.memory->size(), std::max({held(a.stats()), held(b.stats()), held(c.stats())}));
  for (int round = 0; round < 2; ++round) {
    expect_matches(b.run(large_feed), large_want, "large optimal, shared");
    expect_matches(a.run(small_feed), small_want, "small, after the block grew");
    expect_matches(c.run(large_feed), large_want, "large greedy, shared");
  }
}

TEST(CpuEnvironment, ThreadsAreRangeCheckedAndIsaHasAClass) {
  const int before = cpu_threads();
  EXPECT_THROW(set_cpu_threads(0), Error);
  EXPECT_THROW(set_cpu_threads(-2), Error);
  EXPECT_THROW(set_cpu_threads(5000), Error);
  set_cpu_threads(1);
  EXPECT_EQ(cpu_threads(), 1);
  set_cpu_threads(before);
  EXPECT_GE(available_cores(), 1);
  EXPECT_EQ(cpu_isa_class("avx512_core_amx"), "avx512");
  EXPECT_EQ(cpu_isa_class("avx2_vnni"), "avx2");
  EXPECT_EQ(cpu_isa_class("sse41"), "sse");
  EXPECT_NE(effective_cpu_isa(), "unknown");
}

}  // namespace
}  // namespace orchid
