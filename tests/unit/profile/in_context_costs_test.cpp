// In-context kernel costs: recorded times replace isolated ones, the other kernels'
// isolated times are scaled by the ratio the recorded ones show, and orchestration with
// whole-plan runs settles on a plan whose predicted time is the sum of its kernels'
// in-context medians; a second run on the same database times nothing and gives the same
// plan. No assertion depends on how fast anything runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>

#include "cost/kernel_signature.hpp"
#include "orchestrate/candidates.hpp"
#include "orchestrate/orchestrator.hpp"
#include "passes/load_model.hpp"
#include "profile/in_context_costs.hpp"
#include "profile/measured_cost_model.hpp"
#include "temp_dir.hpp"
#include "test_config_roots.hpp"

namespace fs = std::filesystem;

namespace orchid {
namespace {

std::string model_path(const std::string& name) {
  return std::string(ORCHID_MODELS_DIR) + "/" + name + ".onnx";
}

MeasuredCostOptions quick_options(const std::string& db) {
  MeasuredCostOptions o;
  o.db_path = db;
  o.progress = false;
  o.timer.min_reps = 3;
  o.timer.max_reps = 5;
  o.timer.target_seconds = 0.001;
  o.max_stored_spread = std::numeric_limits<double>::infinity();  // plumbing, not noise
  return o;
}

InContextOptions quick_in_context() {
  InContextOptions o;
  o.min_runs = 3;
  o.max_runs = 3;
  o.seconds_per_plan = 0;
  return o;
}

struct Indexed {
  std::unique_ptr<PrimitiveGraphIndex> index;
  explicit Indexed(const Orchestration& o) {
    std::set<std::string> exported;
    for (const auto& [alt, target] : o.fission.alternatives) exported.insert(alt);
    index = std::make_unique<PrimitiveGraphIndex>(o.fission.graph, exported);
  }
};

std::vector<std::vector<std::size_t>> kernels_of(const Plan& p) {
  std::vector<std::vector<std::size_t>> out;
  for (const auto& k : p.kernels) out.push_back(k.nodes);
  return out;
}

TEST(InContextCosts, RecordedTimesReplaceIsolatedOnesAndScaleTheRest) {
  const test::TempDir dir("in_context_scale");
  const LoadedModel loaded = load_model(model_path("tiny_mlp"));
  const DeviceSpec cpu = load_device_spec("cpu", test::source_configs());
  const MeasuredCostModel costs(cpu, quick_options((dir.path() / "db.json").string()));
  const Orchestration o = orchestrate(loaded.graph, costs, OrchestrateOptions{});
  const Indexed ix(o);
  // Distinct kernels of the operator-level plan, isolated times as stored.
  std::vector<KernelView> views;
  std::set<std::uint64_t> seen;
  for (const auto& k : o.operator_level.kernels) {
    KernelView v = ix.index->view(k.nodes);
    if (seen.insert(kernel_signature(v, cpu.name)).second) views.push_back(v);
  }
  ASSERT_GE(views.size(), 4u);
  std::vector<double> isolated;
  for (const auto& v : views) {
    const ProfileEntry* e = costs.database().find(kernel_signature(v, cpu.name));
    ASSERT_NE(e, nullptr);
    ASSERT_TRUE(e->ok());
    isolated.push_back(e->median_us);
  }
  // Every kernel but the last gets an in-context time of 3x its isolated one; with three
  // or more of them the pooled scale is 3 for a class without enough of its own.
  for (std::size_t i = 0; i + 1 < views.size(); ++i) {
    EXPECT_FALSE(costs.timed_in_context(views[i]));
    costs.record_in_context(views[i], 3 * isolated[i], 2.9 * isolated[i], 3.1 * isolated[i], 5);
    EXPECT_TRUE(costs.timed_in_context(views[i]));
  }
  costs.prepare(views);
  for (std::size_t i = 0; i + 1 < views.size(); ++i) {
    EXPECT_DOUBLE_EQ(costs.latency_us(views[i]), 3 * isolated[i]);
  }
  EXPECT_NEAR(costs.latency_us(views.back()), 3 * isolated.back(), 1e-9 * isolated.back());
  EXPECT_NEAR(costs.stats().context_scale_linear, 3, 1e-12);
  EXPECT_NEAR(costs.stats().context_scale_other, 3, 1e-12);
  EXPECT_EQ(costs.stats().in_context, views.size() - 1);
  // Kept in the database.
  costs.save();
  const ProfileDb back = ProfileDb::open((dir.path() / "db.json").string(), cpu.name,
                                         std::numeric_limits<double>::infinity());
  const ProfileEntry* e = back.find(kernel_signature(views[0], cpu.name));
  ASSERT_NE(e, nullptr);
  EXPECT_DOUBLE_EQ(e->context_us, 3 * isolated[0]);
  EXPECT_EQ(e->context_reps, 5);
}

class InContextModels : public ::testing::TestWithParam<const char*> {};

TEST_P(InContextModels, SettlesOnPlanCostedByItsInContextTimesAndReproducesIt) {
  const test::TempDir dir(std::string("in_context_") + GetParam());
  const std::string db = (dir.path() / "db.json").string();
  const LoadedModel loaded = load_model(model_path(GetParam()));
  const DeviceSpec cpu = load_device_spec("cpu", test::source_configs());
  std::vector<std::vector<std::size_t>> first;
  double first_total = 0;
  {
    const MeasuredCostModel costs(cpu, quick_options(db));
    InContextReport r;
    const Orchestration o =
        orchestrate_in_context(loaded.graph, costs, OrchestrateOptions{}, quick_in_context(), &r);
    EXPECT_GE(r.rounds, 1);
    EXPECT_GE(r.plans_timed, 2);  // the optimum and the baselines, the first time
    EXPECT_GT(r.kernels_recorded, 0u);
    EXPECT_TRUE(r.settled || !r.kept_instead.empty());
    const Indexed ix(o);
    double sum = 0;
    for (const auto& k : o.optimal.kernels) {
      const KernelView v = ix.index->view(k.nodes);
      ASSERT_TRUE(costs.timed_in_context(v));
      const ProfileEntry* e = costs.database().find(kernel_signature(v, cpu.name));
      ASSERT_NE(e, nullptr);
      EXPECT_DOUBLE_EQ(k.cost_us, e->context_us);
      sum += e->context_us;
    }
    EXPECT_NEAR(o.optimal.total_us, sum, 1e-9 * sum);
    for (const Plan* p : {&o.greedy, &o.operator_level}) {
      for (const auto& k : p->kernels) EXPECT_TRUE(costs.timed_in_context(ix.index->view(k.nodes)));
    }
    first = kernels_of(o.optimal);
    first_total = o.optimal.total_us;
  }
  const MeasuredCostModel again(cpu, quick_options(db));
  InContextReport r;
  const Orchestration o =
      orchestrate_in_context(loaded.graph, again, OrchestrateOptions{}, quick_in_context(), &r);
  EXPECT_EQ(r.plans_timed, 0);
  EXPECT_EQ(again.stats().timed, 0u);
  EXPECT_TRUE(r.settled);
  EXPECT_EQ(kernels_of(o.optimal), first);
  EXPECT_DOUBLE_EQ(o.optimal.total_us, first_total);
}

INSTANTIATE_TEST_SUITE_P(InContextTinyModels, InContextModels,
                         ::testing::Values("tiny_mlp", "tiny_conv", "tiny_attention"));

TEST(InContextCosts, NoRoundsIsPlainOrchestration) {
  const test::TempDir dir("in_context_none");
  const LoadedModel loaded = load_model(model_path("tiny_conv"));
  const DeviceSpec cpu = load_device_spec("cpu", test::source_configs());
  const MeasuredCostModel costs(cpu, quick_options((dir.path() / "db.json").string()));
  InContextOptions none = quick_in_context();
  none.max_rounds = 0;
  InContextReport r;
  const Orchestration o =
      orchestrate_in_context(loaded.graph, costs, OrchestrateOptions{}, none, &r);
  EXPECT_EQ(r.plans_timed, 0);
  EXPECT_EQ(costs.stats().in_context, 0u);
  const Orchestration plain = orchestrate(loaded.graph, costs, OrchestrateOptions{});
  EXPECT_EQ(kernels_of(o.optimal), kernels_of(plain.optimal));
}

}  // namespace
}  // namespace orchid
