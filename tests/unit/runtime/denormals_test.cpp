// Denormal floats are flushed to zero while a plan runs (runtime/denormals.hpp), and the
// threads' floating-point modes come back afterwards.
#include <gtest/gtest.h>
#include <omp.h>
#include <xmmintrin.h>

#include <vector>

#include "cost/cost_model.hpp"
#include "eval/reference_interpreter.hpp"
#include "orchestrate/orchestrator.hpp"
#include "runtime/denormals.hpp"
#include "runtime/plan_executor.hpp"
#include "small_graph.hpp"
#include "test_config_roots.hpp"

namespace orchid {
namespace {

using runtime_test::f32;
using runtime_test::make_graph;

constexpr unsigned kFtzDaz = 0x8040;

// Every OpenMP thread's MXCSR (thread 0 is the caller).
std::vector<unsigned> thread_modes() {
  std::vector<unsigned> modes(static_cast<std::size_t>(omp_get_max_threads()), 0);
#pragma omp parallel
  modes[static_cast<std::size_t>(omp_get_thread_num())] = _mm_getcsr();
  return modes;
}

TEST(Denormals, FlushedOnEveryThreadWhileHeldAndRestoredAfter) {
  const std::vector<unsigned> before = thread_modes();
  {
    const DenormalsFlushedOnWorkers workers;
    {
      const DenormalsFlushedOnWorkers second;  // held twice: released once, still held
    }
    const DenormalsFlushed caller(true);
    for (unsigned m : thread_modes()) EXPECT_EQ(m & kFtzDaz, kFtzDaz);
  }
  EXPECT_EQ(thread_modes(), before);
  {
    const DenormalsFlushed caller(false);
    EXPECT_EQ(thread_modes(), before);
  }
}

// x * 1e-39 is denormal: the reference keeps it, a plan run flushes it to zero (and the
// caller's mode is back afterwards); with flushing off the plan computes it too.
TEST(Denormals, APlanRunFlushesThemAndKeepsThemWhenAsked) {
  const float tiny = 1e-39f;
  const Graph g = make_graph({{"x", {1, 64}}}, {{"c", f32({1}, {tiny})}},
                             {{"Mul", {"x", "c"}, {"y"}}, {"Relu", {"y"}, {"z"}}}, {"z"});
  TensorMap feed;
  feed["x"] = f32({1, 64}, std::vector<float>(64, 1.0f));
  const TensorMap want = ReferenceInterpreter(g).run(feed);
  ASSERT_EQ(want.at("z").data<float>()[0], tiny);
  const auto cost_model = make_analytic_cost_model(load_device_spec("cpu", test::source_configs()));
  const Orchestration o = orchestrate(g, *cost_model);
  const unsigned mode = _mm_getcsr();
  {
    PlanExecutor executor(o.fission.graph, o.optimal, o.fission.alternatives);
    const TensorMap flushed = executor.run(feed);
    EXPECT_EQ(_mm_getcsr(), mode);
    for (std::int64_t i = 0; i < 64; ++i) EXPECT_EQ(flushed.at("z").data<float>()[i], 0.0f) << i;
  }
  set_flush_denormals(false);  // read when an executor is built
  PlanExecutor keeping(o.fission.graph, o.optimal, o.fission.alternatives);
  set_flush_denormals(true);
  const TensorMap kept = keeping.run(feed);
  for (std::int64_t i = 0; i < 64; ++i) EXPECT_EQ(kept.at("z").data<float>()[i], tiny) << i;
}

}  // namespace
}  // namespace orchid
