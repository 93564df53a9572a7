#include "orchestrate/k_best.hpp"

#include "util/error.hpp"

namespace orchid {

CombinationRanker::CombinationRanker(std::size_t regions, CostOf cost_of)
    : cost_of_(std::move(cost_of)), known_(regions), exhausted_(regions, false) {
  State first;
  first.ranks.assign(regions, 0);
  for (std::size_t r = 0; r < regions; ++r) {
    const auto c = cost(r, 0);
    if (!c) internal_error("k-best plans: region {} has no selection", r);
    first.total += *c;
  }
  queue_.push(std::move(first));
}

std::optional<double> CombinationRanker::cost(std::size_t region, std::size_t rank) {
  auto& list = known_[region];
  while (list.size() <= rank && !exhausted_[region]) {
    const auto c = cost_of_(region, list.size());
    if (!c) {
      exhausted_[region] = true;
    } else {
      list.push_back(*c);
    }
  }
  if (rank < list.size()) return list[rank];
  return std::nullopt;
}

// Every combination has one parent: itself with its highest advanced region moved back
// one rank. So a state's children advance only regions at or after its own `last`.
void CombinationRanker::push_children(const State& s) {
  for (std::size_t r = s.last; r < s.ranks.size(); ++r) {
    const auto now = cost(r, s.ranks[r]);
    const auto after = cost(r, s.ranks[r] + 1);
    if (!now || !after) continue;
    State child = s;
    ++child.ranks[r];
    child.total += *after - *now;
    child.last = r;
    queue_.push(std::move(child));
  }
}

std::optional<std::pair<std::vector<std::size_t>, double>> CombinationRanker::next() {
  if (queue_.empty()) return std::nullopt;
  State s = queue_.top();
  queue_.pop();
  push_children(s);
  return std::make_pair(s.ranks, s.total);
}

}  // namespace orchid
