#include "orchestrate/candidates.hpp"

#include <algorithm>
#include <unordered_set>

#include "fission/primitive.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

// Ops that may sit around a linear primitive in one kernel: they are pure maps on the
// linear op's inputs or outputs (or free views), so a GEMM/conv template can apply them
// in its prologue or epilogue.
bool allowed_beside_linear(const Node& node) {
  const PrimitiveClass c = primitive_class(node);
  if (c == PrimitiveClass::Elementwise) return true;
  return node.op_type == "Reshape" || node.op_type == "Expand";
}

}  // namespace

std::string generability_violation(const Graph& graph, const std::vector<std::size_t>& nodes) {
  std::size_t linear = 0;
  bool other_not_allowed_with_linear = false;
  for (std::size_t i : nodes) {
    const Node& node = graph.nodes[i];
    if (primitive_class(node) == PrimitiveClass::Linear) {
      ++linear;
    } else if (!allowed_beside_linear(node)) {
      other_not_allowed_with_linear = true;
    }
  }
  if (linear > 1) return "more than one linear primitive";
  if (linear == 1 && other_not_allowed_with_linear) {
    return "a linear primitive with a reduction or layout primitive";
  }
  return "";
}

PrimitiveGraphIndex::PrimitiveGraphIndex(const Graph& graph, std::set<std::string> exported)
    : graph_(graph), reach_(graph), exported_(std::move(exported)) {
  const std::size_t n = graph.nodes.size();
  neighbours_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t p : reach_.predecessors(i)) {
      neighbours_[i].push_back(p);
      neighbours_[p].push_back(i);
    }
    for (const auto& t : graph.nodes[i].outputs) {
      if (!t.empty()) producer_[t] = i;
    }
    for (const auto& t : graph.nodes[i].inputs) {
      if (!t.empty()) {
        auto& list = consumers_[t];
        if (list.empty() || list.back() != i) list.push_back(i);
      }
    }
  }
  for (auto& list : neighbours_) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  for (const auto& out : graph.outputs) exported_.insert(out);
}

KernelView PrimitiveGraphIndex::view(std::vector<std::size_t> nodes) const {
  std::sort(nodes.begin(), nodes.end());
  KernelView v;
  v.graph = &graph_;
  v.nodes = nodes;
  auto member = [&](std::size_t i) { return std::binary_search(nodes.begin(), nodes.end(), i); };
  std::unordered_set<std::string> seen;
  for (std::size_t i : nodes) {
    for (const auto& t : graph_.nodes[i].inputs) {
      if (t.empty() || !seen.insert(t).second) continue;
      auto p = producer_.find(t);
      if (p != producer_.end() && member(p->second)) continue;
      v.inputs.push_back(t);
    }
  }
  for (std::size_t i : nodes) {
    for (const auto& t : graph_.nodes[i].outputs) {
      if (t.empty()) continue;
      bool needed = exported_.count(t) != 0;
      if (!needed) {
        auto c = consumers_.find(t);
        if (c != consumers_.end()) {
          for (std::size_t j : c->second) {
            if (!member(j)) {
              needed = true;
              break;
            }
          }
        }
      }
      if (needed) v.outputs.push_back(t);
    }
  }
  return v;
}

namespace {

class Enumerator {
 public:
  Enumerator(const PrimitiveGraphIndex& index, const std::vector<std::size_t>& region,
             const CandidateRules& rules)
      : index_(index),
        rules_(rules),
        in_region_(index.graph().nodes.size(), false),
        near_(index.graph().nodes.size(), 0) {
    for (std::size_t v : region) in_region_[v] = true;
  }

  std::vector<std::vector<std::size_t>> run(const std::vector<std::size_t>& region) {
    for (std::size_t root : region) {
      root_ = root;
      current_ = {root};
      if (!generability_violation(index_.graph(), current_).empty()) continue;
      mark(root, +1);
      std::vector<std::size_t> extension;
      for (std::size_t u : index_.neighbours(root)) {
        if (u > root && in_region_[u]) extension.push_back(u);
      }
      extend(extension);
      mark(root, -1);
    }
    return std::move(found_);
  }

 private:
  // near_[u] counts members of the current set that are u or adjacent to u.
  void mark(std::size_t v, int delta) {
    near_[v] += delta;
    for (std::size_t u : index_.neighbours(v)) near_[u] += delta;
  }

  // The convex hull of a set is inside every convex superset, so a set whose hull is
  // too big or not generable can be abandoned with all its extensions.
  bool hull_is_hopeless(const Bitset& gap) {
    const std::size_t missing = gap.count();
    if (missing == 0) return false;
    if (current_.size() + missing > rules_.max_nodes) return true;
    std::vector<std::size_t> hull = current_;
    gap.for_each([&](std::size_t v) { hull.push_back(v); });
    return !generability_violation(index_.graph(), hull).empty();
  }

  void record(bool convex) {
    if (!convex) return;
    std::vector<std::size_t> sorted = current_;
    std::sort(sorted.begin(), sorted.end());
    found_.push_back(std::move(sorted));
    if (found_.size() > rules_.max_candidates_per_region) {
      fail(
          "candidate enumeration: more than {} candidates in one region; lower the largest "
          "kernel size",
          rules_.max_candidates_per_region);
    }
  }

  // Wernicke's ESU: every connected set containing root_ as its smallest node is reached
  // exactly once, by adding only "exclusive" neighbours of the newest node.
  void extend(std::vector<std::size_t> extension) {
    const Bitset gap = index_.reachability().convex_gap(current_);
    if (hull_is_hopeless(gap)) return;
    record(!gap.any());
    if (current_.size() >= rules_.max_nodes) return;
    while (!extension.empty()) {
      const std::size_t w = extension.back();
      extension.pop_back();
      std::vector<std::size_t> next = extension;
      for (std::size_t u : index_.neighbours(w)) {
        if (u > root_ && in_region_[u] && near_[u] == 0) next.push_back(u);
      }
      current_.push_back(w);
      if (generability_violation(index_.graph(), current_).empty()) {
        mark(w, +1);
        extend(std::move(next));
        mark(w, -1);
      }
      current_.pop_back();
    }
  }

  const PrimitiveGraphIndex& index_;
  const CandidateRules& rules_;
  std::vector<bool> in_region_;
  std::vector<int> near_;
  std::size_t root_ = 0;
  std::vector<std::size_t> current_;
  std::vector<std::vector<std::size_t>> found_;
};

}  // namespace

std::vector<std::vector<std::size_t>> enumerate_candidates(const PrimitiveGraphIndex& index,
                                                           const std::vector<std::size_t>& region,
                                                           const CandidateRules& rules) {
  return Enumerator(index, region, rules).run(region);
}

}  // namespace orchid
