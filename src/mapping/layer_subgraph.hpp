// A layer as an ONNX-like subgraph, for pricing it on a GPU with the kernel orchestrator.
// The linear op is rebuilt from the (shard's) dimensions, so every batch and shard gets
// its exact shapes:
//   conv    X[B, N, (R-1)S+K, (C-1)S+K] (the input rows a shard reads, halo included)
//           * W[M, N, K, K], stride S, no padding -> [B, M, R, C], + bias[M]
//   fc      X[B*K, N] x W[N, M] (+ bias[M])
//   matmul  A[B*G, M, N] x B[B*G, N, K], both runtime tensors
//   lstm    one time step: x[B, D] W[D, 4H] + h[B, H] R[H, 4H] + b, sigmoid gates,
//           c' = f*c + g, h' = o*c' (the caller multiplies by the number of steps)
// then the layer's other ONNX nodes (its epilogue, or a cheap layer's own op) as the
// workload extraction recorded them, with symbolic dims resolved for the shard. Case-file
// layers, which have no ONNX nodes, get bias + ReLU after conv/fc; a case-file cheap
// layer becomes a ReLU over its elements.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.hpp"
#include "mapping/workload.hpp"

namespace orchid::mapping {

struct LayerSubgraph {
  Graph graph;
  double repeat = 1;  // LSTM: time steps of the one-step graph
};

// Throws orchid::Error when the recorded nodes do not fit the shard's shapes.
LayerSubgraph layer_subgraph(const Layer& layer);

// What identifies a layer's subgraph: dims, batch, split, bias and the recipe.
std::string layer_signature(const Layer& layer);

// `nodes` of `model` (indices, topological order) as a graph of their own: the
// non-constant tensors they read from outside are its inputs, constants are shared, and
// `outputs` are its outputs. The plan runner runs a layer (or part of one) as such a graph.
Graph nodes_subgraph(const Graph& model, const std::string& name,
                     const std::vector<std::size_t>& nodes,
                     const std::vector<std::string>& outputs);

// A whole layer as the plan runner runs it (`layer.nodes` of the graph it was extracted
// from): its own ONNX nodes, the layout ops that follow it included (a Transpose that
// splits attention heads moves data, which layer_subgraph leaves out), its outputs the
// tensors other nodes read and the model's outputs among them. Empty (no nodes) for a
// layer without nodes in `model`.
Graph layer_program(const Graph& model, const Layer& layer);

}  // namespace orchid::mapping
