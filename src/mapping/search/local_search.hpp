// Steepest-descent local search around the GA's best individual: move one device
// between groups (opening a group with any design), change one group's design, move one
// layer run to another group. Every neighbour gets its own (memoised) sharding search.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "mapping/search/encoding.hpp"
#include "mapping/search/memo_evaluator.hpp"

namespace orchid::mapping::search {

std::vector<Outer> neighbours(const Problem& pb, const Outer& current);

struct LocalSearchState {
  Outer outer;
  Mapping mapping;
  double latency = 0;
  int moves = 0;  // improving moves taken
};

// Improves `state` in place until no neighbour is better, options.local_search_passes
// moves were taken, or `out_of_time` says stop. `report` gets one line per move.
void local_search(const Problem& pb, MemoisedEvaluator& evaluator, const SearchOptions& options,
                  LocalSearchState& state, const std::function<bool()>& out_of_time,
                  const std::function<void(int pass, std::size_t neighbours)>& report);

}  // namespace orchid::mapping::search
