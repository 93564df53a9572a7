// In-context kernel costs: recorded times replace the base model's costs, the other
// kernels' costs are scaled by the ratio the recorded ones show, and orchestration with
// whole-plan runs settles on a plan whose predicted time is the sum of its kernels'
// in-context medians; a second run on the same database times nothing and gives the same
// plan. No assertion depends on how fast anything runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cost/kernel_signature.hpp"
#include "eval/random_inputs.hpp"
#include "eval/reference_interpreter.hpp"
#include "op_test_util.hpp"
#include "orchestrate/candidates.hpp"
#include "orchestrate/orchestrator.hpp"
#include "passes/load_model.hpp"
#include "profile/in_context_costs.hpp"
#include "profile/plan_selection.hpp"
#include "runtime/plan_executor.hpp"
#include "temp_dir.hpp"
#include "test_config_roots.hpp"

namespace orchid {
namespace {

std::string model_path(const std::string& name) {
  return std::string(ORCHID_MODELS_DIR) + "/" + name + ".onnx";
}

InContextOptions quick_in_context() {
  InContextOptions o;
  o.min_runs = 3;
  o.max_runs = 3;
  o.seconds_per_plan = 0;
  o.wide_retries = 0;
  o.max_rounds = 20;  // enough for the tiny models to settle
  return o;
}

// A base model with known costs: 10 us per primitive.
class PerNodeCosts final : public CostModel {
 public:
  double latency_us(const KernelView& kernel) const override {
    return 10.0 * static_cast<double>(kernel.nodes.size());
  }
  std::string describe() const override { return "10 us per primitive"; }
};

std::unique_ptr<PrimitiveGraphIndex> index_of(const Orchestration& o) {
  std::set<std::string> exported;
  for (const auto& [alt, target] : o.fission.alternatives) exported.insert(alt);
  return std::make_unique<PrimitiveGraphIndex>(o.fission.graph, exported);
}

std::vector<std::vector<std::size_t>> kernels_of(const Plan& p) {
  std::vector<std::vector<std::size_t>> out;
  for (const auto& k : p.kernels) out.push_back(k.nodes);
  return out;
}

TEST(InContextCosts, RecordedTimesReplaceBaseCostsAndScaleTheRest) {
  const test::TempDir dir("in_context_scale");
  const std::string db = (dir.path() / "context.json").string();
  const LoadedModel loaded = load_model(model_path("tiny_mlp"));
  const PerNodeCosts base;
  const Orchestration o = orchestrate(loaded.graph, base, OrchestrateOptions{});
  const auto index = index_of(o);
  // Distinct kernels of the per-primitive plan.
  std::vector<KernelView> views;
  std::set<std::uint64_t> seen;
  for (const auto& k : o.per_primitive.kernels) {
    KernelView v = index->view(k.nodes);
    if (seen.insert(kernel_signature(v, "cpu")).second) views.push_back(v);
  }
  ASSERT_GE(views.size(), 4u);
  {
    const InContextCostModel costs(base, "cpu", db);
    // Every kernel but the last: 3x its base cost in context. With three or more of them
    // the pooled scale, 3, applies to a class without enough of its own.
    for (std::size_t i = 0; i + 1 < views.size(); ++i) {
      EXPECT_FALSE(costs.timed_in_context(views[i]));
      costs.record(views[i], 3 * base.latency_us(views[i]), 29, 31, 5);
      EXPECT_TRUE(costs.timed_in_context(views[i]));
    }
    costs.record(views[0], 30, 10, 30, 5);  // again, with a wide spread: kept, counted
    costs.prepare(views);
    for (std::size_t i = 0; i + 1 < views.size(); ++i) {
      EXPECT_DOUBLE_EQ(costs.latency_us(views[i]), 30);
    }
    EXPECT_NEAR(costs.latency_us(views.back()), 30, 1e-9);
    EXPECT_NEAR(costs.stats().scale_linear, 3, 1e-12);
    EXPECT_NEAR(costs.stats().scale_other, 3, 1e-12);
    EXPECT_EQ(costs.stats().in_context, views.size() - 1);
    EXPECT_EQ(costs.stats().kernels, views.size());
    EXPECT_EQ(costs.stats().wide_spread, 1u);
  }  // saved
  const InContextCostModel again(base, "cpu", db);
  EXPECT_TRUE(again.timed_in_context(views[0]));
  EXPECT_FALSE(again.timed_in_context(views.back()));
  EXPECT_DOUBLE_EQ(again.latency_us(views[0]), 30);
  // The file holds in-context fields only.
  std::ifstream in(db);
  const nlohmann::json j = nlohmann::json::parse(in);
  for (const auto& [key, e] : j.at("entries").items()) {
    EXPECT_TRUE(e.contains("context_us")) << key;
    EXPECT_FALSE(e.contains("median_us")) << key;
  }
  // Another device's file is refused with its name.
  try {
    InContextCostModel other(base, "a100", db);
    ADD_FAILURE() << "opened another device's database";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(db), std::string::npos) << e.what();
  }
}

class InContextModels : public ::testing::TestWithParam<const char*> {};

TEST_P(InContextModels, SettlesOnPlanCostedByItsInContextTimesAndReproducesIt) {
  const test::TempDir dir(std::string("in_context_") + GetParam());
  const std::string db = (dir.path() / "context.json").string();
  const LoadedModel loaded = load_model(model_path(GetParam()));
  const auto base = make_analytic_cost_model(load_device_spec("cpu", test::source_configs()));
  std::vector<std::vector<std::size_t>> first;
  double first_total = 0;
  {
    const InContextCostModel costs(*base, "cpu", db);
    InContextReport r;
    const Orchestration o =
        orchestrate_in_context(loaded.graph, costs, OrchestrateOptions{}, quick_in_context(), &r);
    EXPECT_GE(r.rounds, 1);
    EXPECT_GE(r.plans_timed, 2);  // the optimum and the baselines, the first time
    EXPECT_GT(r.kernels_recorded, 0u);
    ASSERT_TRUE(r.settled) << r.rounds << " rounds";
    EXPECT_EQ(r.costs.kernels, costs.stats().kernels);
    const auto index = index_of(o);
    double sum = 0;
    for (const auto& k : o.optimal.kernels) {
      const KernelView v = index->view(k.nodes);
      ASSERT_TRUE(costs.timed_in_context(v));
      EXPECT_DOUBLE_EQ(k.cost_us, costs.latency_us(v));
      sum += k.cost_us;
    }
    EXPECT_NEAR(o.optimal.total_us, sum, 1e-9 * sum);
    for (const Plan* p : {&o.greedy, &o.operator_level}) {
      for (const auto& k : p->kernels) EXPECT_TRUE(costs.timed_in_context(index->view(k.nodes)));
    }
    first = kernels_of(o.optimal);
    first_total = o.optimal.total_us;
  }
  const InContextCostModel again(*base, "cpu", db);
  InContextReport r;
  OrchestrateOptions ranked;
  ranked.k_best = 2;  // ranked once at the end: the same optimum
  const Orchestration o =
      orchestrate_in_context(loaded.graph, again, ranked, quick_in_context(), &r);
  EXPECT_EQ(r.plans_timed, 0);
  EXPECT_EQ(r.rounds, 0);
  EXPECT_TRUE(r.settled);
  EXPECT_EQ(kernels_of(o.optimal), first);
  EXPECT_DOUBLE_EQ(o.optimal.total_us, first_total);
  ASSERT_FALSE(o.ranked.empty());
  EXPECT_EQ(kernels_of(o.ranked.front()), first);
}

INSTANTIATE_TEST_SUITE_P(InContextTinyModels, InContextModels,
                         ::testing::Values("tiny_mlp", "tiny_conv", "tiny_attention"));

TEST(InContextCosts, AtTheRoundLimitThePlanUsesTimedKernelsAndLaterRunsStopThere) {
  const test::TempDir dir("in_context_limit");
  const std::string db = (dir.path() / "context.json").string();
  const LoadedModel loaded = load_model(model_path("tiny_attention"));
  const auto base = make_analytic_cost_model(load_device_spec("cpu", test::source_configs()));
  InContextOptions one = quick_in_context();
  one.max_rounds = 1;
  std::vector<std::vector<std::size_t>> first;
  {
    const InContextCostModel costs(*base, "cpu", db);
    InContextReport r;
    const Orchestration o = orchestrate_in_context(loaded.graph, costs, {}, one, &r);
    EXPECT_EQ(r.rounds, 1);
    const auto index = index_of(o);
    // Settled in one round, or the plan of the kernels timed in context: either way every
    // kernel of the optimal plan was timed whole.
    for (const auto& k : o.optimal.kernels) {
      EXPECT_TRUE(costs.timed_in_context(index->view(k.nodes)));
    }
    if (!r.settled) {
      EXPECT_TRUE(r.timed_only);
      EXPECT_GT(r.unverified_optimum_us, 0);
      EXPECT_NE(describe_in_context(r).find("timed in context"), std::string::npos);
    }
    first = kernels_of(o.optimal);
  }
  const InContextCostModel again(*base, "cpu", db);
  InContextReport r;
  const Orchestration o = orchestrate_in_context(loaded.graph, again, {}, one, &r);
  EXPECT_EQ(r.plans_timed, 0);  // stops where the first run stopped
  EXPECT_EQ(kernels_of(o.optimal), first);
}

TEST(InContextCosts, NoRoundsIsPlainOrchestration) {
  const LoadedModel loaded = load_model(model_path("tiny_conv"));
  const auto base = make_analytic_cost_model(load_device_spec("cpu", test::source_configs()));
  const InContextCostModel costs(*base, "cpu", "");  // in memory
  InContextOptions none = quick_in_context();
  none.max_rounds = 0;
  InContextReport r;
  const Orchestration o =
      orchestrate_in_context(loaded.graph, costs, OrchestrateOptions{}, none, &r);
  EXPECT_EQ(r.plans_timed, 0);
  EXPECT_EQ(costs.stats().in_context, 0u);
  const Orchestration plain = orchestrate(loaded.graph, *base, OrchestrateOptions{});
  EXPECT_EQ(kernels_of(o.optimal), kernels_of(plain.optimal));
  EXPECT_DOUBLE_EQ(o.optimal.total_us, plain.optimal.total_us);
}

// The rounds orchestrate one fission again and again: that keeps the primitive graph's
// node order, so plans found before stay valid on it.
TEST(InContextCosts, OrchestratingAFissionAgainKeepsItsNodesAndPlans) {
  const LoadedModel loaded = load_model(model_path("tiny_attention"));
  const auto base = make_analytic_cost_model(load_device_spec("cpu", test::source_configs()));
  OrchestrateOptions options;
  options.k_best = 2;
  const Orchestration first = orchestrate(loaded.graph, *base, options);
  FissionResult copy = first.fission;
  const Orchestration again = orchestrate(std::move(copy), *base, options);
  ASSERT_EQ(again.fission.graph.nodes.size(), first.fission.graph.nodes.size());
  for (std::size_t i = 0; i < first.fission.graph.nodes.size(); ++i) {
    EXPECT_EQ(again.fission.graph.nodes[i].name, first.fission.graph.nodes[i].name) << i;
  }
  EXPECT_EQ(kernels_of(again.optimal), kernels_of(first.optimal));
  ASSERT_EQ(again.ranked.size(), first.ranked.size());
  for (std::size_t k = 0; k < first.ranked.size(); ++k) {
    EXPECT_EQ(kernels_of(again.ranked[k]), kernels_of(first.ranked[k]));
  }
  EXPECT_EQ(again.stats.model_nodes, loaded.graph.nodes.size());
}

// The default command's memory: the rounds' executors share a packing that holds the
// primitive graph's weights, so a weight read only packed is held once (packed), across
// the rounds, the selection and the run; every candidate still computes the reference
// interpreter's outputs (|d| <= 1e-4 + 1e-4 |ref|).
TEST(InContextCosts, HeldWeightsAreDroppedOnceAcrossRoundsAndSelection) {
  const LoadedModel loaded = load_model(model_path("tiny_attention"));
  const auto base = make_analytic_cost_model(load_device_spec("cpu", test::source_configs()));
  const InContextCostModel costs(*base, "cpu", "");  // in memory
  OrchestrateOptions options;
  options.k_best = 2;
  PackedWeights packing;
  InContextOptions quick = quick_in_context();
  quick.packing = &packing;
  InContextReport r;
  Orchestration o = orchestrate_in_context(fission(loaded.graph, fission_options(options)), costs,
                                           options, quick, &r);
  EXPECT_GE(r.plans_timed, 1);
  packing.hold_weights_of(&o.fission.graph);
  std::size_t released = 0;
  for (const auto& w : o.fission.graph.weights()) {
    if (!packing.released(w)) continue;
    ++released;
    EXPECT_EQ(o.fission.graph.tensor(w).data->raw(), nullptr) << w;
  }
  EXPECT_GT(released, 0u);

  const TensorMap feed = make_random_inputs(loaded.graph, 3);
  const TensorMap want = ReferenceInterpreter(loaded.graph).run(feed);
  const std::vector<const Plan*> candidates = plan_candidates(o);
  PlanSelectionOptions so;
  so.budget_seconds = 0.02;
  so.packing = &packing;
  PlanSelection s =
      select_fastest_plan(o.fission.graph, o.fission.alternatives, candidates, feed, so);
  ASSERT_TRUE(s.fastest_executor);
  const TensorMap got = s.fastest_executor->run(feed);
  for (const auto& [name, value] : want) {
    EXPECT_TRUE(testing::tensors_close(got.at(name), value, 1e-4, 1e-4)) << name;
  }
  PlanExecutorOptions shared;
  shared.packing = &packing;
  for (const Plan* p : candidates) {
    PlanExecutor e(o.fission.graph, *p, o.fission.alternatives, shared);
    const TensorMap each = e.run(feed);
    for (const auto& [name, value] : want) {
      EXPECT_TRUE(testing::tensors_close(each.at(name), value, 1e-4, 1e-4))
          << p->kind << " " << name;
    }
  }
}

TEST(InContextCosts, DatabaseSitsBesideTheProfileDatabaseNamedByIsaAndThreads) {
  const std::string p = in_context_db_path("/some/folder/profile-cpu.json");
  EXPECT_EQ(p.rfind("/some/folder/context-cpu-", 0), 0u) << p;
  EXPECT_NE(p.find("-t"), std::string::npos) << p;
}

}  // namespace
}  // namespace orchid
