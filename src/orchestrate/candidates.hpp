// Candidate kernels: connected, convex sets of primitives that a backend can generate —
// memory-bound kernels of elementwise / reduce / broadcast / layout primitives, or one
// linear primitive with an elementwise (and reshape/broadcast) prologue and epilogue.
// Each set is produced exactly once (ESU-style canonical extension from its smallest
// node) and kernels may have several outputs.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "fission/kernel_view.hpp"
#include "ir/graph.hpp"
#include "orchestrate/reachability.hpp"

namespace orchid {

struct CandidateRules {
  std::size_t max_nodes = 10;  // bound on primitives per kernel
  // Safety valve: enumeration of one region stops with an error past this many sets.
  std::size_t max_candidates_per_region = 400000;
};

// Why a set of primitives cannot be one kernel, or "" if it can (ignoring convexity).
// Monotone: if a set is refused, so is every superset.
std::string generability_violation(const Graph& graph, const std::vector<std::size_t>& nodes);

// Facts about a primitive graph that enumeration and kernel views need, computed once.
class PrimitiveGraphIndex {
 public:
  // `exported`: tensors that count as kernel outputs even without readers (alternatives).
  PrimitiveGraphIndex(const Graph& graph, std::set<std::string> exported);

  const Graph& graph() const { return graph_; }
  const Reachability& reachability() const { return reach_; }
  // Inputs, outputs, sorted nodes of a set, computed from the precomputed consumer lists.
  KernelView view(std::vector<std::size_t> nodes) const;
  // Undirected neighbours (producers and consumers).
  const std::vector<std::size_t>& neighbours(std::size_t node) const { return neighbours_[node]; }

 private:
  const Graph& graph_;
  Reachability reach_;
  std::set<std::string> exported_;
  std::vector<std::vector<std::size_t>> neighbours_;
  std::unordered_map<std::string, std::vector<std::size_t>> consumers_;
  std::unordered_map<std::string, std::size_t> producer_;
};

// Every valid candidate whose nodes all lie in `region` (sorted node indices), as sorted
// node lists, in a deterministic order.
std::vector<std::vector<std::size_t>> enumerate_candidates(const PrimitiveGraphIndex& index,
                                                           const std::vector<std::size_t>& region,
                                                           const CandidateRules& rules);

}  // namespace orchid
