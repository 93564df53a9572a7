// Inner GA over sharding strategies.
#include "mapping/search/inner_search.hpp"

#include <algorithm>

#include "mapping/genetic_search.hpp"
#include "util/random.hpp"

namespace orchid::mapping::search {

namespace {

bool offers(const std::vector<Strategy>& choices, Strategy s) {
  return std::find(choices.begin(), choices.end(), s) != choices.end();
}

}  // namespace

Inner inner_search(const Evaluator& ev, Mapping m, const SearchOptions& opt, std::uint64_t seed) {
  const int layers = static_cast<int>(m.group_of.size());
  SplitMix64 rng(seed);
  std::vector<std::vector<Strategy>> choices(layers);
  std::vector<int> free_layers;  // layers with more than one valid strategy
  for (int l = 0; l < layers; ++l) {
    const Group& g = m.groups[m.group_of[l]];
    for (int s = 0; s < kStrategies; ++s) {
      if (ev.valid(l, g.design, g.size, static_cast<Strategy>(s))) {
        choices[l].push_back(static_cast<Strategy>(s));
      }
    }
    if (choices[l].empty()) choices[l].push_back(Strategy::None);
    if (choices[l].size() > 1) free_layers.push_back(l);
  }
  auto eval = [&](const std::vector<Strategy>& st) {
    m.strategy = st;
    return ev.makespan(m);
  };
  std::vector<std::vector<Strategy>> pop;
  pop.push_back(greedy_sharding(ev, m));
  for (Strategy pref : {Strategy::Batch, Strategy::OutChannel, Strategy::Spatial}) {
    std::vector<Strategy> st = pop[0];
    for (int l : free_layers) {
      if (offers(choices[l], pref)) st[l] = pref;
    }
    pop.push_back(st);
  }
  Inner best{eval(pop[0]), pop[0]};
  if (free_layers.empty()) return best;
  while (static_cast<int>(pop.size()) < opt.inner_population) {
    std::vector<Strategy> st = pop[0];
    for (int l : free_layers) {
      if (rng.below(opt.inner_random_layer_one_in) == 0) {
        st[l] = choices[l][rng.below(choices[l].size())];
      }
    }
    pop.push_back(st);
  }
  std::vector<double> fit(pop.size());
  for (std::size_t i = 0; i < pop.size(); ++i) {
    fit[i] = eval(pop[i]);
    if (fit[i] < best.latency) best = {fit[i], pop[i]};
  }
  const double mutate =
      std::min(opt.inner_mutation_max, opt.inner_mutations_per_child / free_layers.size());
  int stale = 0;
  for (int gen = 0; gen < opt.inner_generations && stale < opt.inner_stagnation; ++gen) {
    std::vector<std::vector<Strategy>> next;
    next.push_back(best.strategy);
    auto pick = [&]() {  // binary tournament
      const std::size_t a = rng.below(pop.size()), b = rng.below(pop.size());
      return fit[a] <= fit[b] ? a : b;
    };
    while (next.size() < pop.size()) {
      const auto& pa = pop[pick()];
      const auto& pbv = pop[pick()];
      std::vector<Strategy> child = pa;
      for (int l : free_layers) {
        if (rng.below(2)) child[l] = pbv[l];
        if (rng.uniform01() < mutate) {
          const auto& preds = ev.workload().layers[l].preds;
          if (!preds.empty() && rng.below(2) && m.group_of[preds[0]] == m.group_of[l] &&
              offers(choices[l], child[preds[0]])) {
            child[l] = child[preds[0]];  // copy the neighbour: no resharding between them
          } else {
            child[l] = choices[l][rng.below(choices[l].size())];
          }
        }
      }
      next.push_back(std::move(child));
    }
    pop = std::move(next);
    const double before = best.latency;
    for (std::size_t i = 0; i < pop.size(); ++i) {
      fit[i] = eval(pop[i]);
      if (fit[i] < best.latency) best = {fit[i], pop[i]};
    }
    stale = best.latency < before * (1 - 1e-9) ? 0 : stale + 1;
  }
  return best;
}

}  // namespace orchid::mapping::search
