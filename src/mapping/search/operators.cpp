// Outer GA operators.
#include "mapping/search/operators.hpp"

#include <algorithm>
#include <numeric>

#include "mapping/genetic_search.hpp"

namespace orchid::mapping::search {

std::size_t tournament(const std::vector<double>& fit, const SearchOptions& opt, SplitMix64& rng) {
  std::size_t best = rng.below(fit.size());
  for (int k = 1; k < opt.tournament_size; ++k) {
    const std::size_t c = rng.below(fit.size());
    if (fit[c] < fit[best]) best = c;
  }
  return best;
}

Outer crossover(const Problem& pb, const Outer& a, const Outer& b, const SearchOptions& opt,
                SplitMix64& rng) {
  Outer child = a;
  if (rng.uniform01() >= opt.crossover_rate) return child;
  if (rng.below(2)) child.size = b.size;  // sizes travel whole: the sum stays n
  for (int s = 0; s < pb.fpga_slots; ++s) {
    if (rng.below(2)) child.design[s] = b.design[s];
  }
  // Two-point crossover keeps runs of neighbouring layers together.
  std::size_t lo = rng.below(pb.unit_count()), hi = rng.below(pb.unit_count());
  if (lo > hi) std::swap(lo, hi);
  for (std::size_t u = lo; u <= hi; ++u) child.unit_slot[u] = b.unit_slot[u];
  return child;
}

void mutate(const Problem& pb, Outer& child, const SearchOptions& opt, SplitMix64& rng) {
  if (pb.fpga_slots > 1 && rng.uniform01() < opt.device_move_rate) {
    const int from = static_cast<int>(rng.below(pb.fpga_slots));
    const int to = static_cast<int>(rng.below(pb.fpga_slots));
    if (child.size[from] > 0 && from != to) {
      const int moved = 1 + static_cast<int>(rng.below(child.size[from]));
      child.size[from] -= moved;
      child.size[to] += moved;
    }
  }
  for (int s = 0; s < pb.fpga_slots; ++s) {
    if (rng.uniform01() < opt.design_mutation_rate) {
      child.design[s] = static_cast<int>(rng.below(pb.design_count()));
    }
  }
  const int units = pb.unit_count();
  const double pm = std::min(opt.run_mutation_max, opt.run_mutations_per_child / units);
  for (int u = 0; u < units; ++u) {
    if (rng.uniform01() >= pm) continue;
    if (rng.below(2) && u > 0)
      child.unit_slot[u] = child.unit_slot[u - 1];
    else if (rng.below(2) && u + 1 < units)
      child.unit_slot[u] = child.unit_slot[u + 1];
    else
      child.unit_slot[u] = static_cast<int>(rng.below(pb.slots()));
  }
}

std::vector<Outer> next_generation(const Problem& pb, const std::vector<Outer>& pop,
                                   const std::vector<double>& fit, const SearchOptions& opt,
                                   SplitMix64& rng) {
  std::vector<std::size_t> rank(pop.size());
  std::iota(rank.begin(), rank.end(), 0);
  std::stable_sort(rank.begin(), rank.end(), [&](auto a, auto b) { return fit[a] < fit[b]; });
  std::vector<Outer> next;
  for (int e = 0; e < opt.elites && e < static_cast<int>(rank.size()); ++e) {
    next.push_back(pop[rank[e]]);
  }
  while (next.size() < pop.size()) {
    const Outer& a = pop[tournament(fit, opt, rng)];
    const Outer& b = pop[tournament(fit, opt, rng)];
    Outer child = crossover(pb, a, b, opt, rng);
    mutate(pb, child, opt, rng);
    next.push_back(std::move(child));
  }
  return next;
}

}  // namespace orchid::mapping::search
