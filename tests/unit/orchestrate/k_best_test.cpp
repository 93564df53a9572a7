// k best plans: the combination ranker lists sums of per-region ranked costs in order
// (checked against brute force), and orchestrate(k_best) returns distinct plans in
// non-decreasing predicted cost, the optimum first, each computing the model.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "cost/cost_model.hpp"
#include "cost/device_spec.hpp"
#include "orchestrate/k_best.hpp"
#include "orchestrate/orchestrator.hpp"
#include "passes/load_model.hpp"
#include "test_config_roots.hpp"

namespace orchid {
namespace {

TEST(KBestPlans, RankerListsEveryCombinationInCostOrder) {
  const std::vector<std::vector<double>> lists = {{1, 4, 6}, {2, 2.5}, {0, 7, 8, 9}};
  std::vector<std::pair<double, std::vector<std::size_t>>> all;
  for (std::size_t a = 0; a < 3; ++a) {
    for (std::size_t b = 0; b < 2; ++b) {
      for (std::size_t c = 0; c < 4; ++c) {
        all.push_back({lists[0][a] + lists[1][b] + lists[2][c], {a, b, c}});
      }
    }
  }
  std::sort(all.begin(), all.end());
  int calls = 0;
  CombinationRanker ranker(3, [&](std::size_t r, std::size_t rank) -> std::optional<double> {
    ++calls;
    if (rank >= lists[r].size()) return std::nullopt;
    return lists[r][rank];
  });
  std::set<std::vector<std::size_t>> seen;
  double previous = -1;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto next = ranker.next();
    ASSERT_TRUE(next.has_value()) << i;
    EXPECT_DOUBLE_EQ(next->second, all[i].first) << i;
    EXPECT_GE(next->second, previous);
    previous = next->second;
    EXPECT_TRUE(seen.insert(next->first).second) << "combination listed twice";
  }
  EXPECT_FALSE(ranker.next().has_value());
  EXPECT_LE(calls, (3 + 2 + 4) + 3);  // each (region, rank) once, plus once past each end
}

TEST(KBestPlans, OrchestrateReturnsDistinctPlansInCostOrder) {
  const LoadedModel loaded = load_model(std::string(ORCHID_MODELS_DIR) + "/tiny_attention.onnx");
  const auto model = make_analytic_cost_model(load_device_spec("cpu", test::source_configs()));
  OrchestrateOptions options;
  options.k_best = 4;
  const Orchestration o = orchestrate(loaded.graph, *model, options);
  ASSERT_GE(o.ranked.size(), 2u);
  ASSERT_LE(o.ranked.size(), 4u);
  EXPECT_EQ(o.ranked.front().kind, "optimal");
  EXPECT_DOUBLE_EQ(o.ranked.front().total_us, o.optimal.total_us);
  std::set<std::set<std::vector<std::size_t>>> kernel_sets;
  for (std::size_t i = 0; i < o.ranked.size(); ++i) {
    const Plan& p = o.ranked[i];
    if (i > 0) {
      EXPECT_EQ(p.kind, "optimal-" + std::to_string(i + 1));
      EXPECT_GE(p.total_us, o.ranked[i - 1].total_us * (1 - 1e-9));
    }
    std::set<std::vector<std::size_t>> kernels;
    for (const auto& k : p.kernels) kernels.insert(k.nodes);
    EXPECT_TRUE(kernel_sets.insert(kernels).second) << "plan " << i << " repeats a kernel set";
  }
  // Without k_best nothing extra is solved.
  EXPECT_TRUE(orchestrate(loaded.graph, *model).ranked.empty());
}

}  // namespace
}  // namespace orchid
