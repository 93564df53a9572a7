// What remains of a graph with data-dependent shapes once its static part has run: the
// nodes after it, reading the static part's outputs as graph inputs. `orchid run
// DETECTOR --device cpu` runs the static part (backbone, heads, box decoding) on the
// plan executor and this rest (NMS, TopK, If/Loop) on the reference interpreter.
#pragma once

#include "ir/graph.hpp"

namespace orchid {

// `part` must be static_part(graph). The rest's inputs are the original inputs it still
// reads plus every output of `part`; its outputs are the graph's.
Graph dynamic_rest(const Graph& graph, const Graph& part);

}  // namespace orchid
