// Two-level genetic search. Outer level: group sizes, a design per group and a group
// per layer run; inner level: a sharding strategy per layer for the groups the outer
// individual chose. Inner results are memoised by the outer decision, individuals are
// evaluated on all cores, and every random choice comes from SplitMix64 streams derived
// from the seed and the individual, so a seed gives the same plan on any thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mapping/evaluator.hpp"

namespace orchid::mapping {

struct SearchOptions {
  std::uint64_t seed = 1;
  int population = 40;
  int generations = 150;
  int stagnation = 25;  // stop after this many generations without improvement
  int inner_population = 12;
  int inner_generations = 10;
  int threads = 0;  // 0 = hardware concurrency
  int max_groups = 6;
  double time_limit_s = 25;  // safety stop; reached only on very large workloads
  // Polish the GA's best individual by first-improvement local search (move one device
  // between groups, move one layer run to another group, change one group's design).
  bool local_search = true;
  int local_search_passes = 50;  // at most this many improving moves
  // Complete mappings (e.g. the baselines' plans) the result is never worse than: each
  // is costed as given and with greedy sharding; the best of them and the GA wins.
  std::vector<Mapping> seed_mappings;

  // Encoding: consecutive layers of one modality are placed together in runs ("units");
  // a workload is cut into at most this many runs, which bounds the outer chromosome.
  int max_layer_runs = 40;

  // Outer GA operators. The defaults are the values every committed benchmark used.
  int elites = 2;                     // best individuals copied into the next generation
  int tournament_size = 3;            // contestants per parent selection (least latency wins)
  double crossover_rate = 0.9;        // else the child is a copy of its first parent
  double device_move_rate = 0.4;      // move 1..all devices of one group to another
  double design_mutation_rate = 0.1;  // per group: load a random design
  // Per layer run: reassign it (to a neighbour's group or a random one) with probability
  // min(run_mutation_max, run_mutations_per_child / runs).
  double run_mutation_max = 0.3;
  double run_mutations_per_child = 2.0;
  // Random individuals that fill the first population copy a seed's placement and move
  // each run to a random group with probability 1 / random_run_move_one_in.
  int random_run_move_one_in = 3;

  // Inner (sharding) GA operators.
  int inner_random_layer_one_in = 4;  // initial individuals: each layer re-drawn with 1/4
  double inner_mutation_max = 0.5;    // per layer: min(max, per_child / free layers)
  double inner_mutations_per_child = 2.0;
  int inner_stagnation = 3;  // stop after this many generations without improvement
};

struct SearchResult {
  Mapping mapping;
  double latency = 0;
  int generations = 0;
  double seconds = 0;
  std::size_t inner_runs = 0;  // distinct outer individuals sharded
  std::size_t memo_hits = 0;
  int local_moves = 0;         // improving local-search moves taken
  int from_seed_mapping = -1;  // index into SearchOptions::seed_mappings when one won
};

using ProgressFn = std::function<void(const std::string&)>;

SearchResult genetic_search(const Evaluator& evaluator, const SearchOptions& options,
                            const ProgressFn& progress = {});

// Sharding per layer, chosen greedily in list order: the cheapest valid strategy given
// the layouts its predecessors already produce.
std::vector<Strategy> greedy_sharding(const Evaluator& evaluator, const Mapping& mapping);

// Best layer placement inside fixed groups that keeps every layer on a group whose design
// supports it; used to repair individuals and by the baselines. Returns -1 when none.
int supporting_group(const Evaluator& evaluator, const std::vector<Group>& groups, int layer,
                     int preferred);

}  // namespace orchid::mapping
