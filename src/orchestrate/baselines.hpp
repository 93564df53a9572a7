// The plans orchid compares its optimum against, all as partitions of the primitive
// graph's main nodes (alternative subgraphs are never used):
//  - operator-level: one kernel per ONNX op as imported (the primitives of that op);
//  - per-primitive: one kernel per primitive;
//  - greedy fusion in the style of TVM/XLA: elementwise chains into their consumer,
//    reductions with their elementwise producers, elementwise epilogues into the
//    preceding linear op — merged greedily in topological order while the kernel stays
//    convex and generable.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "orchestrate/candidates.hpp"

namespace orchid {

using Partition = std::vector<std::vector<std::size_t>>;

Partition operator_level_partition(const Graph& primitives,
                                   const std::map<std::string, std::string>& origin,
                                   const std::set<std::size_t>& alternative_nodes);
Partition per_primitive_partition(const Graph& primitives,
                                  const std::set<std::size_t>& alternative_nodes);
Partition greedy_fusion_partition(const PrimitiveGraphIndex& index,
                                  const std::set<std::size_t>& alternative_nodes,
                                  std::size_t max_nodes);

}  // namespace orchid
