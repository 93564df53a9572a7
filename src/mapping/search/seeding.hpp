// The first outer population: individuals built by five seeding heuristics (one group
// of every device with the best design; the same with every other design that runs the
// whole workload; a group per heavy layer kind; a main group plus a small side group for
// the layers its design cannot run; a group per modality), then random individuals.
#pragma once

#include <vector>

#include "mapping/search/encoding.hpp"
#include "util/random.hpp"

namespace orchid::mapping::search {

// Distinct heuristic seeds (none when the system has no FPGA slots: one blank individual).
std::vector<Outer> heuristic_seeds(const Problem& pb);

// The heuristic seeds, filled up to options.population with random individuals drawn
// from `rng` (each copies a seed's placement and moves some runs).
std::vector<Outer> initial_population(const Problem& pb, const SearchOptions& options,
                                      SplitMix64& rng);

// Split `devices` over weights.size() parts in proportion to `weights`, every part at
// least one device.
std::vector<int> apportion(const std::vector<double>& weights, int devices);

}  // namespace orchid::mapping::search
