// The static part of a graph with data-dependent shapes: the nodes that run before any
// of them (a detector's backbone and heads, without its post-processing). Optimizers,
// which need static shapes, can work on it.
#pragma once

#include "ir/graph.hpp"

namespace orchid {

// Every node with static outputs, no subgraphs and only static inputs from the graph
// inputs, constants or other such nodes; its outputs are the static tensors the rest of
// the graph reads, plus static graph outputs, in node order. A static graph comes back
// unchanged. An orchid::Error naming the first dynamic node when nothing static feeds
// the rest (the data-dependent part starts at the inputs).
Graph static_part(const Graph& graph);

}  // namespace orchid
