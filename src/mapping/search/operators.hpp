// Outer GA operators: elitism, tournament selection, crossover (group sizes travel
// whole, designs per slot, two-point over layer runs) and mutation (move devices between
// groups, change a design, reassign layer runs). Rates come from SearchOptions.
#pragma once

#include <vector>

#include "mapping/search/encoding.hpp"
#include "util/random.hpp"

namespace orchid::mapping::search {

// Index of the fittest of options.tournament_size random individuals.
std::size_t tournament(const std::vector<double>& fitness, const SearchOptions& options,
                       SplitMix64& rng);

// A child of parents a and b.
Outer crossover(const Problem& pb, const Outer& a, const Outer& b, const SearchOptions& options,
                SplitMix64& rng);
void mutate(const Problem& pb, Outer& child, const SearchOptions& options, SplitMix64& rng);

// The next generation: the elites, then children of tournament-selected parents.
std::vector<Outer> next_generation(const Problem& pb, const std::vector<Outer>& population,
                                   const std::vector<double>& fitness, const SearchOptions& options,
                                   SplitMix64& rng);

}  // namespace orchid::mapping::search
