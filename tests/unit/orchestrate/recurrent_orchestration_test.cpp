// Orchestrating unrolled recurrent layers with the default options finishes: a two-layer
// bidirectional RNN (tests/data/quant_recurrent/rnn_two_layer_bidirectional) once made one
// region of ~35,000 candidates whose costing and root LP ran for minutes: the layer's
// unused Y_h primitives sat in that region and kept it from being cut, and each layer's
// primitives were kept in one region. Both fixed; the plan must be proven optimal
// (gap 0) well inside the default 60 s limit, be at least as fast as the greedy-fusion
// plan, and compute what the reference interpreter computes (|a - b| <= 1e-4 + 1e-3 |b|).
#include <gtest/gtest.h>

#include <chrono>

#include "cost/cost_model.hpp"
#include "eval/reference_interpreter.hpp"
#include "ir/npy.hpp"
#include "op_test_util.hpp"
#include "orchestrate/orchestrator.hpp"
#include "passes/load_model.hpp"
#include "runtime/plan_executor.hpp"
#include "test_config_roots.hpp"

namespace orchid {
namespace {

TEST(RecurrentOrchestration, TwoLayerRnnIsSolvedWithDefaultOptions) {
  const std::string dir =
      std::string(ORCHID_TEST_DATA_DIR) + "/quant_recurrent/rnn_two_layer_bidirectional";
  const LoadedModel model = load_model(dir + "/model.onnx");
  for (const char* device : {"a100", "cpu"}) {
    SCOPED_TRACE(device);
    const auto cost_model =
        make_analytic_cost_model(load_device_spec(device, test::source_configs()));
    const auto start = std::chrono::steady_clock::now();
    const Orchestration o = orchestrate(model.graph, *cost_model);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(o.stats.proven_optimal);
    EXPECT_EQ(o.stats.blp_gap, 0.0);
    EXPECT_LT(seconds, 30.0);
    EXPECT_LT(o.stats.largest_region_candidates, 5000u);
    EXPECT_LE(o.optimal.total_us, o.greedy.total_us + 1e-9);

    TensorMap feed;
    feed.emplace("X", read_npy(dir + "/inputs/X.npy"));
    const TensorMap expected = ReferenceInterpreter(model.graph).run(feed);
    PlanExecutor executor(o.fission.graph, o.optimal, o.fission.alternatives);
    const TensorMap got = executor.run(feed);
    for (const auto& [name, want] : expected) {
      EXPECT_TRUE(testing::tensors_close(got.at(name), want, 1e-3, 1e-4)) << name;
    }
  }
}

}  // namespace
}  // namespace orchid
