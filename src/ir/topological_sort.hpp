// Stable topological order of a DAG given by successor lists: Kahn's algorithm where
// the smallest ready index goes first, so an order that is already valid is kept and
// ties follow the given order. The graph IR and the mapper's layer DAG both use it.
#pragma once

#include <cstddef>
#include <vector>

namespace orchid {

// `successors[i]` lists the nodes that depend on node i (repeats count as one edge
// each; they are released together). Returns every index once, or fewer than
// successors.size() indices when there is a cycle (the missing ones are on or after it).
std::vector<std::size_t> stable_topological_order(
    const std::vector<std::vector<std::size_t>>& successors);

}  // namespace orchid
