#include "orchestrate/reachability.hpp"

#include <algorithm>

#include "util/error.hpp"

namespace orchid {

Reachability::Reachability(const Graph& graph) {
  const std::size_t n = graph.nodes.size();
  preds_.resize(n);
  succs_.resize(n);
  const auto producer = graph.producers();
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto& t : graph.nodes[i].inputs) {
      auto it = producer.find(t);
      if (it == producer.end()) continue;
      if (it->second >= i) fail("Reachability: graph '{}' is not topologically sorted", graph.name);
      preds_[i].push_back(it->second);
    }
    std::sort(preds_[i].begin(), preds_[i].end());
    preds_[i].erase(std::unique(preds_[i].begin(), preds_[i].end()), preds_[i].end());
    for (std::size_t p : preds_[i]) succs_[p].push_back(i);
  }
  ancestors_.assign(n, Bitset(n));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t p : preds_[i]) {
      ancestors_[i].set(p);
      ancestors_[i] |= ancestors_[p];
    }
  }
  descendants_.assign(n, Bitset(n));
  for (std::size_t i = n; i-- > 0;) {
    for (std::size_t s : succs_[i]) {
      descendants_[i].set(s);
      descendants_[i] |= descendants_[s];
    }
  }
}

Bitset Reachability::convex_gap(const std::vector<std::size_t>& nodes) const {
  const std::size_t n = size();
  Bitset members(n), below(n), above(n);
  for (std::size_t v : nodes) {
    members.set(v);
    below |= descendants_[v];
    above |= ancestors_[v];
  }
  below &= above;
  below.subtract(members);
  return below;
}

bool Reachability::is_convex(const std::vector<std::size_t>& nodes) const {
  const std::size_t n = size();
  Bitset members(n), below(n), above(n);
  for (std::size_t v : nodes) {
    members.set(v);
    below |= descendants_[v];
    above |= ancestors_[v];
  }
  below &= above;
  below.subtract(members);
  return !below.any();
}

}  // namespace orchid
