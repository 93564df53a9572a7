#include "ir/topological_sort.hpp"

#include <functional>
#include <queue>

namespace orchid {

std::vector<std::size_t> stable_topological_order(
    const std::vector<std::vector<std::size_t>>& successors) {
  const std::size_t n = successors.size();
  std::vector<std::size_t> pending(n, 0);
  for (const auto& succ : successors) {
    for (std::size_t s : succ) ++pending[s];
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<std::size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const std::size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (std::size_t s : successors[i]) {
      if (--pending[s] == 0) ready.push(s);
    }
  }
  return order;
}

}  // namespace orchid
