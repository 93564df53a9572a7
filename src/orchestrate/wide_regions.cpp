// split_wide_region (regions.hpp): multi-tensor cuts for regions whose BLP is too wide.
#include <algorithm>
#include <limits>
#include <unordered_map>

#include "orchestrate/regions.hpp"

namespace orchid {

std::vector<std::vector<std::size_t>> split_wide_region(
    const Graph& g, const std::vector<std::size_t>& region,
    const std::set<std::size_t>& alternative_nodes,
    const std::vector<std::vector<std::size_t>>& keep_together, int max_live) {
  const std::size_t m = region.size();
  if (m < 4) return {};
  std::unordered_map<std::size_t, int> position;
  for (std::size_t p = 0; p < m; ++p) {
    if (alternative_nodes.count(region[p])) return {};
    position[region[p]] = static_cast<int>(p);
  }
  // live[p]: tensors produced in the region before position p and read in it at or
  // after p; blocked[p]: keep-together groups with nodes on both sides of p.
  std::vector<int> live(m + 1, 0), blocked(m + 1, 0);
  std::unordered_map<std::string, int> produced_at;
  for (std::size_t p = 0; p < m; ++p) {
    for (const auto& t : g.nodes[region[p]].outputs) produced_at[t] = static_cast<int>(p);
  }
  std::unordered_map<std::string, int> last_read;
  for (std::size_t p = 0; p < m; ++p) {
    for (const auto& t : g.nodes[region[p]].inputs) {
      if (produced_at.count(t)) last_read[t] = std::max(last_read[t], static_cast<int>(p));
    }
  }
  for (const auto& [t, last] : last_read) {
    const int first = produced_at[t];
    if (last > first) {
      live[static_cast<std::size_t>(first + 1)] += 1;
      live[static_cast<std::size_t>(last + 1)] -= 1;
    }
  }
  for (const auto& group : keep_together) {
    int lo = static_cast<int>(m), hi = -1;
    for (std::size_t v : group) {
      auto it = position.find(v);
      if (it == position.end()) continue;
      lo = std::min(lo, it->second);
      hi = std::max(hi, it->second);
    }
    if (hi > lo) {
      blocked[static_cast<std::size_t>(lo + 1)] += 1;
      blocked[static_cast<std::size_t>(hi + 1)] -= 1;
    }
  }
  int run_live = 0, run_block = 0;
  std::size_t best = 0;
  int best_live = std::numeric_limits<int>::max();
  std::size_t best_distance = m;
  for (std::size_t p = 0; p < m; ++p) {
    run_live += live[p];
    run_block += blocked[p];
    if (p < m / 4 || p > m - m / 4 || run_block != 0 || run_live > max_live) {
      continue;
    }
    const std::size_t distance = p > m / 2 ? p - m / 2 : m / 2 - p;
    if (run_live < best_live || (run_live == best_live && distance < best_distance)) {
      best = p;
      best_live = run_live;
      best_distance = distance;
    }
  }
  if (best == 0) return {};
  return {
      std::vector<std::size_t>(region.begin(), region.begin() + static_cast<std::ptrdiff_t>(best)),
      std::vector<std::size_t>(region.begin() + static_cast<std::ptrdiff_t>(best), region.end())};
}

}  // namespace orchid
