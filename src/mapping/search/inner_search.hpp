// The inner GA: a sharding strategy per layer for a fixed placement (groups, designs,
// layer -> group). Seeded with greedy sharding and all-batch / all-out-channel /
// all-spatial variants; crossover is uniform per layer, mutation copies the
// predecessor's strategy (no resharding between them) or draws a valid one.
#pragma once

#include <cstdint>
#include <vector>

#include "mapping/evaluator.hpp"

namespace orchid::mapping {
struct SearchOptions;
}

namespace orchid::mapping::search {

struct Inner {
  double latency = 0;
  std::vector<Strategy> strategy;
};

Inner inner_search(const Evaluator& ev, Mapping placement, const SearchOptions& options,
                   std::uint64_t seed);

}  // namespace orchid::mapping::search
