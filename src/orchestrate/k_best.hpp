// The k best whole plans when the plan's cost is a sum of independent region costs.
//
// Each region has its own ranked list of selections (the BLP's optimum, then the next
// best after a no-good cut on each earlier selection); a whole plan takes one selection
// per region. CombinationRanker lists the choices (a rank per region) in non-decreasing
// order of total cost, asking a region for its next selection only when a combination
// needs it (each extra selection is one more BLP solve).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <queue>
#include <set>
#include <vector>

namespace orchid {

class CombinationRanker {
 public:
  // `cost_of(region, rank)`: the cost of that region's rank-th best selection (rank 0 =
  // its optimum), or nullopt when it has no more. Called at most once per (region, rank),
  // in increasing rank per region. Every region must have a rank 0.
  using CostOf = std::function<std::optional<double>(std::size_t region, std::size_t rank)>;
  CombinationRanker(std::size_t regions, CostOf cost_of);

  // The next cheapest combination (one rank per region) and its total, or nullopt when
  // every combination was listed.
  std::optional<std::pair<std::vector<std::size_t>, double>> next();

 private:
  struct State {
    double total = 0;
    std::vector<std::size_t> ranks;
    std::size_t last = 0;  // the highest region advanced to reach it (unique parent)
    bool operator>(const State& o) const {
      return total != o.total ? total > o.total : ranks > o.ranks;
    }
  };
  std::optional<double> cost(std::size_t region, std::size_t rank);
  void push_children(const State& s);

  CostOf cost_of_;
  std::vector<std::vector<double>> known_;  // per region, the costs listed so far
  std::vector<bool> exhausted_;
  std::priority_queue<State, std::vector<State>, std::greater<>> queue_;
};

}  // namespace orchid
