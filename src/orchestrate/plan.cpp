#include "orchestrate/plan.hpp"

#include <algorithm>
#include <queue>
#include <set>
#include <unordered_map>

#include "util/error.hpp"

namespace orchid {

namespace {

std::int64_t assign_offsets(std::vector<ArenaSlot>& slots) {
  std::vector<std::size_t> order(slots.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return slots[a].bytes > slots[b].bytes; });
  std::vector<std::size_t> placed;
  std::int64_t peak = 0;
  for (std::size_t i : order) {
    ArenaSlot& s = slots[i];
    std::vector<std::pair<std::int64_t, std::int64_t>> busy;
    for (std::size_t j : placed) {
      const ArenaSlot& o = slots[j];
      if (o.first_kernel <= s.last_kernel && s.first_kernel <= o.last_kernel) {
        busy.emplace_back(o.offset, o.offset + o.bytes);
      }
    }
    std::sort(busy.begin(), busy.end());
    std::int64_t offset = 0;
    for (const auto& [lo, hi] : busy) {
      if (offset + s.bytes <= lo) break;
      offset = std::max(offset, hi);
    }
    s.offset = offset;
    peak = std::max(peak, offset + s.bytes);
    placed.push_back(i);
  }
  return peak;
}

constexpr std::int64_t kAlignment = 64;

}  // namespace

std::int64_t assign_arena_offsets(std::vector<ArenaSlot>& slots,
                                  const std::vector<std::vector<std::size_t>>& same_block) {
  if (same_block.empty()) return assign_offsets(slots);
  // Every slot in exactly one block: its group, or itself alone.
  std::vector<std::size_t> block_of(slots.size(), slots.size());
  std::vector<ArenaSlot> blocks;
  for (const auto& group : same_block) {
    if (group.empty()) continue;
    ArenaSlot b = slots.at(group.front());
    for (std::size_t i : group) {
      if (block_of.at(i) != slots.size()) internal_error("arena: slot {} in two groups", i);
      block_of[i] = blocks.size();
      b.bytes = std::max(b.bytes, slots[i].bytes);
      b.first_kernel = std::min(b.first_kernel, slots[i].first_kernel);
      b.last_kernel = std::max(b.last_kernel, slots[i].last_kernel);
    }
    blocks.push_back(b);
  }
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (block_of[i] != slots.size()) continue;
    block_of[i] = blocks.size();
    blocks.push_back(slots[i]);
  }
  const std::int64_t peak = assign_offsets(blocks);
  for (std::size_t i = 0; i < slots.size(); ++i) slots[i].offset = blocks[block_of[i]].offset;
  return peak;
}

std::optional<Plan> build_plan(const PrimitiveGraphIndex& index,
                               const std::map<std::string, std::string>& alternatives,
                               const std::vector<KernelChoice>& choices, const std::string& kind,
                               std::vector<std::size_t>* cycle) {
  const Graph& g = index.graph();
  std::vector<KernelView> views;
  views.reserve(choices.size());
  for (const auto& c : choices) views.push_back(index.view(c.nodes));

  // tensor -> chosen kernels writing it (alternatives count for the tensor they equal)
  std::unordered_map<std::string, std::vector<std::pair<std::size_t, std::string>>> writers;
  for (std::size_t k = 0; k < views.size(); ++k) {
    for (const auto& t : views[k].outputs) {
      writers[t].emplace_back(k, t);
      auto alt = alternatives.find(t);
      if (alt != alternatives.end()) writers[alt->second].emplace_back(k, t);
    }
  }
  const std::set<std::string> graph_inputs(g.inputs.begin(), g.inputs.end());
  std::vector<PlannedKernel> kernels(views.size());
  std::vector<std::vector<std::size_t>> deps(views.size());
  for (std::size_t k = 0; k < views.size(); ++k) {
    PlannedKernel& pk = kernels[k];
    pk.nodes = views[k].nodes;
    pk.inputs = views[k].inputs;
    pk.outputs = views[k].outputs;
    pk.cost_us = choices[k].cost_us;
    for (const auto& t : pk.inputs) {
      if (graph_inputs.count(t) || g.is_constant(t)) {
        pk.sources.push_back(t);
        continue;
      }
      auto it = writers.find(t);
      if (it == writers.end()) {
        fail("plan '{}': no chosen kernel produces '{}', which a kernel reads", kind, t);
      }
      // Prefer the writer that computes the tensor itself, then the earliest one.
      auto best = std::min_element(it->second.begin(), it->second.end(), [&](auto& a, auto& b) {
        const bool a_direct = a.second == t, b_direct = b.second == t;
        if (a_direct != b_direct) return a_direct;
        return views[a.first].nodes.front() < views[b.first].nodes.front();
      });
      pk.sources.push_back(best->second);
      deps[k].push_back(best->first);
    }
  }
  for (const auto& out : g.outputs) {
    if (!graph_inputs.count(out) && !g.is_constant(out) && !writers.count(out)) {
      fail("plan '{}': graph output '{}' is not produced", kind, out);
    }
  }

  // Kahn's order over kernel dependencies; ties by first primitive (deterministic).
  std::vector<std::size_t> pending(views.size(), 0);
  std::vector<std::vector<std::size_t>> users(views.size());
  for (std::size_t k = 0; k < views.size(); ++k) {
    std::sort(deps[k].begin(), deps[k].end());
    deps[k].erase(std::unique(deps[k].begin(), deps[k].end()), deps[k].end());
    pending[k] = deps[k].size();
    for (std::size_t d : deps[k]) users[d].push_back(k);
  }
  using Entry = std::pair<std::size_t, std::size_t>;  // (first node, kernel)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (std::size_t k = 0; k < views.size(); ++k) {
    if (pending[k] == 0) ready.emplace(views[k].nodes.front(), k);
  }
  std::vector<std::size_t> order;
  while (!ready.empty()) {
    const std::size_t k = ready.top().second;
    ready.pop();
    order.push_back(k);
    for (std::size_t u : users[k]) {
      if (--pending[u] == 0) ready.emplace(views[u].nodes.front(), u);
    }
  }
  if (order.size() != views.size()) {
    if (cycle) {
      // Walk dependencies among the blocked kernels until one repeats.
      cycle->clear();
      std::size_t k = 0;
      while (pending[k] == 0) ++k;
      std::vector<int> seen_at(views.size(), -1);
      std::vector<std::size_t> path;
      while (seen_at[k] < 0) {
        seen_at[k] = static_cast<int>(path.size());
        path.push_back(k);
        for (std::size_t d : deps[k]) {
          if (pending[d] != 0) {
            k = d;
            break;
          }
        }
      }
      cycle->assign(path.begin() + seen_at[k], path.end());
    }
    return std::nullopt;
  }

  Plan plan;
  plan.kind = kind;
  std::unordered_map<std::string, std::size_t> position_of_writer;
  for (std::size_t pos = 0; pos < order.size(); ++pos) {
    plan.kernels.push_back(std::move(kernels[order[pos]]));
    plan.total_us += plan.kernels.back().cost_us;
  }
  // Lifetimes: a tensor lives from its (first) writer to its last reader, and to its
  // last writer: a kernel that recomputes it writes its slot again (YOLOX's Focus slices,
  // recomputed by two kernels, got a slot another tensor of the second kernel shared).
  std::map<std::string, ArenaSlot> slots;
  for (std::size_t pos = 0; pos < plan.kernels.size(); ++pos) {
    for (const auto& t : plan.kernels[pos].outputs) {
      if (auto it = slots.find(t); it != slots.end()) {
        it->second.last_kernel = std::max(it->second.last_kernel, pos);
        continue;
      }
      ArenaSlot s;
      s.tensor = t;
      s.bytes = (tensor_bytes(g, t) + kAlignment - 1) / kAlignment * kAlignment;
      s.first_kernel = s.last_kernel = pos;
      slots.emplace(t, s);
    }
    for (const auto& t : plan.kernels[pos].sources) {
      auto it = slots.find(t);
      if (it != slots.end()) it->second.last_kernel = std::max(it->second.last_kernel, pos);
    }
  }
  for (const auto& out : g.outputs) {
    auto it = slots.find(out);
    if (it != slots.end()) it->second.last_kernel = plan.kernels.size();
  }
  for (auto& [name, s] : slots) plan.arena.push_back(s);
  plan.arena_bytes = assign_offsets(plan.arena);
  for (const auto& w : g.weights()) plan.weight_bytes += tensor_bytes(g, w);
  return plan;
}

}  // namespace orchid
