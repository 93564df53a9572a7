// Transitive closure of a DAG of primitive nodes, as bitsets: convexity of a node set
// is then a few word operations. A set S is convex when no path leaves S and re-enters
// it, i.e. (descendants(S) & ancestors(S)) is inside S.
#pragma once

#include <vector>

#include "ir/graph.hpp"
#include "util/bitset.hpp"

namespace orchid {

class Reachability {
 public:
  // `graph.nodes` must be topologically sorted.
  explicit Reachability(const Graph& graph);

  const Bitset& descendants(std::size_t node) const { return descendants_[node]; }
  const Bitset& ancestors(std::size_t node) const { return ancestors_[node]; }
  bool reaches(std::size_t from, std::size_t to) const { return descendants_[from].test(to); }
  bool is_convex(const std::vector<std::size_t>& nodes) const;
  // Nodes outside `nodes` that lie on a path between two of its members: what must be
  // added to make the set convex (empty iff convex).
  Bitset convex_gap(const std::vector<std::size_t>& nodes) const;

  // Direct predecessors / successors through tensor edges.
  const std::vector<std::size_t>& predecessors(std::size_t node) const { return preds_[node]; }
  const std::vector<std::size_t>& successors(std::size_t node) const { return succs_[node]; }
  std::size_t size() const { return preds_.size(); }

 private:
  std::vector<Bitset> descendants_;  // strict
  std::vector<Bitset> ancestors_;    // strict
  std::vector<std::vector<std::size_t>> preds_;
  std::vector<std::vector<std::size_t>> succs_;
};

}  // namespace orchid
