// The GA's parts on their own: encoding, seeding, operators, the memoised evaluator and
// the local search's neighbourhood, on a shipped case (mmmt_case6 on fpga4).
#include <gtest/gtest.h>

#include <numeric>

#include "mapping/genetic_search.hpp"
#include "mapping/search/encoding.hpp"
#include "mapping/search/local_search.hpp"
#include "mapping/search/memo_evaluator.hpp"
#include "mapping/search/operators.hpp"
#include "mapping/search/seeding.hpp"
#include "test_config_roots.hpp"

namespace orchid::mapping::search {
namespace {

const std::string kRoot = ORCHID_SOURCE_DIR;

struct Fixture {
  System sys = load_system(kRoot + "/configs/systems/fpga4.toml");
  Workload w = load_workload("mmmt_case6", 1, test::source_configs());
  Evaluator ev{w, sys};
  SearchOptions opt;
  Problem pb = make_problem(ev, opt);
};

int devices(const Outer& o) {
  return std::accumulate(o.size.begin(), o.size.end(), 0);
}

TEST(MappingSearchParts, ProblemCutsLayersIntoBoundedRuns) {
  Fixture f;
  EXPECT_LE(f.pb.unit_count(), f.opt.max_layer_runs + 8);  // + modality changes
  int layers = 0;
  for (const auto& run : f.pb.units) {
    for (int l : run) {
      EXPECT_EQ(f.w.layers[l].modality, f.w.layers[run[0]].modality);
      EXPECT_EQ(l, layers++);  // runs are consecutive and cover every layer once
    }
  }
  EXPECT_EQ(layers, static_cast<int>(f.w.layers.size()));
}

TEST(MappingSearchParts, DecodeLaysGroupsOutConsecutivelyAndKeysAreStable) {
  Fixture f;
  Outer o = blank_outer(f.pb);
  o.size = {3, 0, 1, 0};
  o.design = {0, 0, 1, 0};
  std::vector<int> key, key2;
  const Mapping m = decode(f.pb, o, key);
  ASSERT_EQ(m.groups.size(), 2u);
  EXPECT_EQ(m.groups[0].first_device, 0);
  EXPECT_EQ(m.groups[1].first_device, 3);
  for (std::size_t l = 0; l < m.group_of.size(); ++l) {
    // Every layer sits on a group whose design runs it (repair), when one exists.
    const Design& d = f.sys.designs[m.groups[m.group_of[l]].design];
    const int g = supporting_group(f.ev, m.groups, static_cast<int>(l), -1);
    if (g >= 0) {
      EXPECT_TRUE(d.supports_kind(f.w.layers[l].kind)) << l;
    }
  }
  decode(f.pb, o, key2);
  EXPECT_EQ(key, key2);
  EXPECT_EQ(hash_key(key), hash_key(key2));
  o.size = {2, 0, 2, 0};
  decode(f.pb, o, key2);
  EXPECT_NE(hash_key(key), hash_key(key2));
}

TEST(MappingSearchParts, SeedsAreDistinctUseEveryDeviceAndStartWithOneGroup) {
  Fixture f;
  const std::vector<Outer> seeds = heuristic_seeds(f.pb);
  ASSERT_GE(seeds.size(), 2u);
  EXPECT_EQ(seeds[0].size[0], f.sys.fpga_devices);  // homogeneous seed first
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    EXPECT_EQ(devices(seeds[i]), f.sys.fpga_devices) << i;
    for (std::size_t j = 0; j < i; ++j) EXPECT_FALSE(seeds[i] == seeds[j]) << i << " " << j;
  }
  SplitMix64 rng(1);
  const std::vector<Outer> pop = initial_population(f.pb, f.opt, rng);
  EXPECT_EQ(static_cast<int>(pop.size()), f.opt.population);
  for (const Outer& o : pop) EXPECT_EQ(devices(o), f.sys.fpga_devices);
}

TEST(MappingSearchParts, ApportionGivesEveryPartADeviceAndUsesThemAll) {
  EXPECT_EQ(apportion({1, 1}, 4), (std::vector<int>{2, 2}));
  EXPECT_EQ(apportion({9, 1}, 5), (std::vector<int>{4, 1}));
  EXPECT_EQ(apportion({0, 0, 1}, 3), (std::vector<int>{1, 1, 1}));
}

TEST(MappingSearchParts, OperatorsKeepTheDeviceCountAndFollowTheRates) {
  Fixture f;
  SplitMix64 rng(3);
  const std::vector<Outer> pop = initial_population(f.pb, f.opt, rng);
  std::vector<double> fit(pop.size());
  for (std::size_t i = 0; i < fit.size(); ++i) fit[i] = static_cast<double>(i);  // 0 fittest
  const std::vector<Outer> next = next_generation(f.pb, pop, fit, f.opt, rng);
  ASSERT_EQ(next.size(), pop.size());
  EXPECT_TRUE(next[0] == pop[0]);  // elites first
  EXPECT_TRUE(next[1] == pop[1]);
  for (const Outer& o : next) EXPECT_EQ(devices(o), f.sys.fpga_devices);
  // With every rate at zero a child is a copy of its first parent.
  SearchOptions still = f.opt;
  still.crossover_rate = 0;
  still.device_move_rate = 0;
  still.design_mutation_rate = 0;
  still.run_mutation_max = 0;
  for (int i = 0; i < 20; ++i) {
    const Outer child = crossover(f.pb, pop[3], pop[4], still, rng);
    Outer mutated = child;
    mutate(f.pb, mutated, still, rng);
    EXPECT_TRUE(child == pop[3]);
    EXPECT_TRUE(mutated == child);
  }
  // A tournament of one is a uniform draw; of the whole population almost always the best.
  SearchOptions big = f.opt;
  big.tournament_size = 200;
  EXPECT_EQ(tournament(fit, big, rng), 0u);
}

TEST(MappingSearchParts, MemoisedEvaluatorHitsOnARepeatAndAgreesWithTheEvaluator) {
  Fixture f;
  f.opt.threads = 2;
  MemoisedEvaluator memo(f.pb, f.opt);
  const std::vector<Outer> seeds = heuristic_seeds(f.pb);
  std::vector<double> fit, fit2;
  std::vector<Mapping> maps, maps2;
  memo.evaluate_all(seeds, fit, maps);
  EXPECT_EQ(memo.inner_runs() + memo.memo_hits(), seeds.size());
  const std::size_t runs = memo.inner_runs();
  memo.evaluate_all(seeds, fit2, maps2);
  EXPECT_EQ(memo.inner_runs(), runs);
  EXPECT_EQ(fit, fit2);
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    EXPECT_DOUBLE_EQ(f.ev.makespan(maps[i]), fit[i]) << i;
    EXPECT_EQ(maps[i].strategy, maps2[i].strategy) << i;
  }
}

TEST(MappingSearchParts, LocalSearchNeighboursDifferByOneMoveAndNeverWorsen) {
  Fixture f;
  const Outer start = heuristic_seeds(f.pb)[0];
  for (const Outer& n : neighbours(f.pb, start)) {
    EXPECT_EQ(devices(n), f.sys.fpga_devices);
    EXPECT_FALSE(n == start);
  }
  MemoisedEvaluator memo(f.pb, f.opt);
  LocalSearchState state;
  state.outer = start;
  state.latency = memo.evaluate(start, state.mapping);
  const double before = state.latency;
  int reported = 0;
  local_search(
      f.pb, memo, f.opt, state, [] { return false; }, [&](int, std::size_t) { ++reported; });
  EXPECT_LE(state.latency, before);
  EXPECT_EQ(reported, state.moves);
  EXPECT_DOUBLE_EQ(f.ev.makespan(state.mapping), state.latency);
}

}  // namespace
}  // namespace orchid::mapping::search
