// Summary figures of a typed graph: op histogram, parameters, FLOPs.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.hpp"

namespace orchid {

// Floating-point operations of one node (a multiply-add counts 2). Linear ops count
// their multiply-adds; elementwise ops one per output element; reductions one per
// input element; composite ops (Softmax, norms, Resize) a small documented multiple.
std::int64_t node_flops(const Graph& graph, const Node& node);

struct GraphStats {
  std::size_t nodes = 0;
  std::size_t tensors = 0;
  std::map<std::string, std::size_t> op_histogram;
  std::int64_t parameters = 0;       // elements of floating-point weights
  std::int64_t parameter_bytes = 0;  // bytes of all constants
  std::int64_t flops = 0;
};

GraphStats compute_graph_stats(const Graph& graph);

}  // namespace orchid
