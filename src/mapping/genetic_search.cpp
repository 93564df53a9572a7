// Two-level GA over groups/designs/placement (outer) and sharding (inner): the driver.
// The parts live in search/: encoding, seeding, operators, inner_search, local_search,
// memo_evaluator.
#include "mapping/genetic_search.hpp"

#include <chrono>

#include <fmt/format.h>

#include "mapping/search/encoding.hpp"
#include "mapping/search/inner_search.hpp"
#include "mapping/search/local_search.hpp"
#include "mapping/search/memo_evaluator.hpp"
#include "mapping/search/operators.hpp"
#include "mapping/search/seeding.hpp"
#include "util/random.hpp"

namespace orchid::mapping {

using namespace search;

namespace {

// The given complete mappings, as they are and with their sharding searched; replaces
// the result when one is better.
void try_seed_mappings(const Evaluator& ev, const SearchOptions& opt, SearchResult& result) {
  for (std::size_t i = 0; i < opt.seed_mappings.size(); ++i) {
    const Mapping& given = opt.seed_mappings[i];
    if (given.groups.empty() || given.group_of.size() != ev.workload().layers.size()) continue;
    Inner in = inner_search(ev, given, opt, opt.seed ^ (0x51ed270b27e1ull + i));
    const double as_given = ev.makespan(given);
    Mapping m = given;
    double t = in.latency;
    m.strategy = in.strategy;
    if (as_given < t) {
      t = as_given;
      m = given;
    }
    if (t < result.latency * (1 - 1e-12)) {
      result.latency = t;
      result.mapping = m;
      result.from_seed_mapping = static_cast<int>(i);
    }
  }
}

}  // namespace

SearchResult genetic_search(const Evaluator& ev, const SearchOptions& opt,
                            const ProgressFn& progress) {
  const auto t_begin = std::chrono::steady_clock::now();
  auto elapsed = [&]() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_begin).count();
  };
  const Problem pb = make_problem(ev, opt);
  SplitMix64 rng(opt.seed * 0x2545f4914f6cdd1dull + 17);
  std::vector<Outer> pop = initial_population(pb, opt, rng);
  MemoisedEvaluator evaluator(pb, opt);
  evaluator.set_deadline(t_begin + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                       std::chrono::duration<double>(opt.time_limit_s)));

  std::vector<double> fit;
  std::vector<Mapping> maps;
  evaluator.evaluate_all(pop, fit, maps);
  SearchResult result;
  Outer best_outer = pop[0];
  auto take_best = [&]() {
    for (std::size_t i = 0; i < pop.size(); ++i) {
      if (maps[i].groups.empty()) continue;  // not evaluated (time limit)
      if (result.mapping.groups.empty() || fit[i] < result.latency) {
        result.latency = fit[i];
        result.mapping = maps[i];
        best_outer = pop[i];
      }
    }
  };
  take_best();
  int stale = 0;
  int gen = 0;
  for (; gen < opt.generations && stale < opt.stagnation && elapsed() < opt.time_limit_s; ++gen) {
    pop = next_generation(pb, pop, fit, opt, rng);
    const double before = result.latency;
    evaluator.evaluate_all(pop, fit, maps);
    take_best();
    stale = result.latency < before * (1 - 1e-9) ? 0 : stale + 1;
    if (progress) {
      progress(fmt::format("gen {:3d}  best {:.4f} ms  sharded {} memo hits {}  {:.1f} s", gen + 1,
                           result.latency * 1e3, evaluator.inner_runs(), evaluator.memo_hits(),
                           elapsed()));
    }
  }
  result.generations = gen;
  if (opt.local_search) {
    LocalSearchState state{best_outer, result.mapping, result.latency, 0};
    local_search(
        pb, evaluator, opt, state, [&]() { return elapsed() >= opt.time_limit_s; },
        [&](int pass, std::size_t neighbours) {
          if (!progress) return;
          progress(fmt::format("local {:3d}  best {:.4f} ms  {} neighbours  {:.1f} s", pass + 1,
                               state.latency * 1e3, neighbours, elapsed()));
        });
    result.latency = state.latency;
    result.mapping = state.mapping;
    result.local_moves = state.moves;
  }
  try_seed_mappings(ev, opt, result);
  result.seconds = elapsed();
  result.inner_runs = evaluator.inner_runs();
  result.memo_hits = evaluator.memo_hits();
  return result;
}

}  // namespace orchid::mapping
