#include "orchestrate/baselines.hpp"

#include <algorithm>
#include <numeric>

#include "fission/primitive.hpp"

namespace orchid {

Partition operator_level_partition(const Graph& g, const std::map<std::string, std::string>& origin,
                                   const std::set<std::size_t>& alternative_nodes) {
  std::map<std::string, std::vector<std::size_t>> by_op;
  std::vector<std::string> first_seen;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (alternative_nodes.count(i)) continue;
    auto it = origin.find(g.nodes[i].name);
    const std::string key = it == origin.end() ? g.nodes[i].name : it->second;
    if (!by_op.count(key)) first_seen.push_back(key);
    by_op[key].push_back(i);
  }
  Partition out;
  for (const auto& key : first_seen) out.push_back(by_op[key]);
  return out;
}

Partition per_primitive_partition(const Graph& g, const std::set<std::size_t>& alternative_nodes) {
  Partition out;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (!alternative_nodes.count(i)) out.push_back({i});
  }
  return out;
}

namespace {

bool is_elementwise(const Node& n) {
  return primitive_class(n) == PrimitiveClass::Elementwise;
}
bool is_linear(const Node& n) {
  return primitive_class(n) == PrimitiveClass::Linear;
}
bool is_reduction(const Node& n) {
  // Not a broadcast (Expand: the reduce/broadcast class's one pure data movement).
  return primitive_class(n) == PrimitiveClass::ReduceBroadcast &&
         op_traits(n.op_type).access != AccessPattern::Layout;
}
// Injective: elementwise or a pure index map (free to inline into a consumer).
bool is_injective(const Node& n) {
  const PrimitiveClass c = primitive_class(n);
  return c == PrimitiveClass::Elementwise || c == PrimitiveClass::Layout ||
         op_traits(n.op_type).access == AccessPattern::Layout;
}

}  // namespace

Partition greedy_fusion_partition(const PrimitiveGraphIndex& index,
                                  const std::set<std::size_t>& alternative_nodes,
                                  std::size_t max_nodes) {
  const Graph& g = index.graph();
  const std::size_t n = g.nodes.size();
  std::vector<std::size_t> group(n);
  std::iota(group.begin(), group.end(), 0);
  std::vector<std::vector<std::size_t>> members(n);
  for (std::size_t i = 0; i < n; ++i) members[i] = {i};
  auto find = [&](std::size_t v) { return group[v]; };

  auto try_merge = [&](std::size_t a, std::size_t b) {
    const std::size_t ga = find(a), gb = find(b);
    if (ga == gb) return false;
    std::vector<std::size_t> merged = members[ga];
    merged.insert(merged.end(), members[gb].begin(), members[gb].end());
    if (merged.size() > max_nodes) return false;
    if (!generability_violation(g, merged).empty()) return false;
    if (!index.reachability().is_convex(merged)) return false;
    for (std::size_t v : members[gb]) group[v] = ga;
    members[ga] = std::move(merged);
    members[gb].clear();
    return true;
  };

  // Rule 1: elementwise epilogues into the preceding linear op (chains of them).
  // Rule 2: elementwise/injective producers into a reduction or elementwise consumer
  //         when the producer has that single consumer (no duplicated work).
  for (std::size_t v = 0; v < n; ++v) {
    if (alternative_nodes.count(v)) continue;
    const Node& node = g.nodes[v];
    const auto& preds = index.reachability().predecessors(v);
    if (is_elementwise(node)) {
      // epilogue: join the group of a linear-containing producer
      for (std::size_t p : preds) {
        if (alternative_nodes.count(p)) continue;
        const auto& m = members[find(p)];
        const bool has_linear =
            std::any_of(m.begin(), m.end(), [&](std::size_t x) { return is_linear(g.nodes[x]); });
        if (has_linear && try_merge(p, v)) break;
      }
    }
    if (is_elementwise(node) || is_reduction(node)) {
      for (std::size_t p : preds) {
        if (alternative_nodes.count(p)) continue;
        if (!is_injective(g.nodes[p])) continue;
        const auto& succ = index.reachability().successors(p);
        if (succ.size() != 1) continue;
        const auto& m = members[find(p)];
        const bool has_linear =
            std::any_of(m.begin(), m.end(), [&](std::size_t x) { return is_linear(g.nodes[x]); });
        if (has_linear) continue;  // epilogues stay with their linear op
        try_merge(v, p);
      }
    }
  }
  Partition out;
  for (std::size_t i = 0; i < n; ++i) {
    if (alternative_nodes.count(i) || members[i].empty()) continue;
    std::vector<std::size_t> m = members[i];
    std::sort(m.begin(), m.end());
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace orchid
