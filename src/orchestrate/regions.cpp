#include "orchestrate/regions.hpp"

#include <algorithm>
#include <unordered_map>

namespace orchid {

RegionSplit split_into_regions(const Graph& g, const std::set<std::size_t>& alternative_nodes,
                               const std::map<std::string, std::string>& alternatives,
                               const std::vector<std::vector<std::size_t>>& keep_together,
                               std::size_t target_size) {
  const std::size_t n = g.nodes.size();
  std::vector<std::size_t> main;
  std::vector<int> position(n, -1);
  for (std::size_t i = 0; i < n; ++i) {
    if (!alternative_nodes.count(i)) {
      position[i] = static_cast<int>(main.size());
      main.push_back(i);
    }
  }
  const std::size_t m = main.size();
  // live[p] = number of tensors produced before main position p and read at or after p.
  std::vector<int> delta(m + 1, 0);
  std::unordered_map<std::string, int> produced_at;
  for (std::size_t p = 0; p < m; ++p) {
    for (const auto& t : g.nodes[main[p]].outputs) produced_at[t] = static_cast<int>(p);
  }
  std::unordered_map<std::string, int> last_read;
  for (std::size_t p = 0; p < m; ++p) {
    for (const auto& t : g.nodes[main[p]].inputs) {
      if (produced_at.count(t)) last_read[t] = std::max(last_read[t], static_cast<int>(p));
    }
  }
  // Tensors live across much more than a region (an attention mask, position
  // embeddings) are side inputs of many regions rather than a reason not to cut: they
  // are required of their producer's region like any tensor crossing a boundary.
  const int long_lived = static_cast<int>(4 * std::max<std::size_t>(target_size, 1));
  for (const auto& [t, last] : last_read) {
    const int first = produced_at[t];
    if (last > first && last - first <= long_lived) {  // live across cuts first+1 .. last
      delta[static_cast<std::size_t>(first + 1)] += 1;
      delta[static_cast<std::size_t>(last + 1)] -= 1;
    }
  }
  std::vector<int> blocked(m + 1, 0);
  for (const auto& group : keep_together) {
    int lo = static_cast<int>(m), hi = -1;
    for (std::size_t v : group) {
      if (position[v] < 0) continue;
      lo = std::min(lo, position[v]);
      hi = std::max(hi, position[v]);
    }
    if (hi > lo) {
      blocked[static_cast<std::size_t>(lo + 1)] += 1;
      blocked[static_cast<std::size_t>(hi + 1)] -= 1;
    }
  }
  RegionSplit split;
  split.region_of.assign(n, -1);
  int live = 0, block = 0, region = 0;
  std::size_t current = 0;
  for (std::size_t p = 0; p < m; ++p) {
    live += delta[p];
    block += blocked[p];
    const bool cut = p > 0 && live == 1 && block == 0;
    if (cut) ++split.possible_cuts;
    if (cut && current >= target_size) {
      ++region;
      current = 0;
    }
    split.region_of[main[p]] = region;
    ++current;
  }
  // Alternative nodes join the region of the tensor their subgraph stands in for; any
  // other alternative node joins the latest region among its producers.
  const auto producers = g.producers();
  std::unordered_map<std::string, int> region_of_alternative_target;
  for (const auto& [alt, target] : alternatives) {
    auto it = producers.find(target);
    if (it != producers.end()) region_of_alternative_target[alt] = split.region_of[it->second];
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!alternative_nodes.count(i)) continue;
    int r = -1;
    for (const auto& t : g.nodes[i].outputs) {
      auto it = region_of_alternative_target.find(t);
      if (it != region_of_alternative_target.end()) r = std::max(r, it->second);
    }
    for (const auto& t : g.nodes[i].inputs) {
      auto it = producers.find(t);
      if (it != producers.end()) r = std::max(r, split.region_of[it->second]);
    }
    split.region_of[i] = std::max(r, 0);
  }
  // Alternative subgraphs are small; make every node of one agree with its final node.
  for (std::size_t i = n; i-- > 0;) {
    if (!alternative_nodes.count(i)) continue;
    for (const auto& t : g.nodes[i].inputs) {
      auto it = producers.find(t);
      if (it != producers.end() && alternative_nodes.count(it->second)) {
        split.region_of[it->second] = std::max(split.region_of[it->second], split.region_of[i]);
      }
    }
  }
  split.regions.assign(static_cast<std::size_t>(region + 1), {});
  for (std::size_t i = 0; i < n; ++i) {
    split.regions[static_cast<std::size_t>(split.region_of[i])].push_back(i);
  }
  split.regions.erase(std::remove_if(split.regions.begin(), split.regions.end(),
                                     [](const auto& r) { return r.empty(); }),
                      split.regions.end());
  for (std::size_t r = 0; r < split.regions.size(); ++r) {
    for (std::size_t v : split.regions[r]) split.region_of[v] = static_cast<int>(r);
  }
  return split;
}

}  // namespace orchid
