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
#include "orchestrate/candidates.hpp"
#include "orchestrate/orchestrator.hpp"
#include "passes/load_model.hpp"
#include "profile/in_context_costs.hpp"
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

TEST(InContextCosts, DatabaseSitsBesideTheProfileDatabaseNamedByIsaAndThreads) {
  const std::string p = in_context_db_path("/some/folder/profile-cpu.json");
  EXPECT_EQ(p.rfind("/some/folder/context-cpu-", 0), 0u) << p;
  EXPECT_NE(p.find("-t"), std::string::npos) << p;
}

}  // namespace
}  // namespace orchid
