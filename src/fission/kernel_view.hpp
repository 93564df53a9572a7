// A candidate kernel as the cost models see it: a set of primitive nodes of a primitive
// graph, with the tensors it reads from and writes to memory. Intermediates inside the
// kernel never touch DRAM.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.hpp"

namespace orchid {

struct KernelView {
  const Graph* graph = nullptr;
  std::vector<std::size_t> nodes;    // indices into graph->nodes, in topological order
  std::vector<std::string> inputs;   // read from memory: produced outside, graph inputs, weights
  std::vector<std::string> outputs;  // written to memory: used outside the kernel or graph outputs
};

// Builds the view of `nodes` (any order; graph->nodes must be topologically sorted):
// inputs are tensors read but not produced inside; outputs are tensors produced inside
// that a node outside the set reads or that are graph outputs.
KernelView make_kernel_view(const Graph& graph, std::vector<std::size_t> nodes);

// Bytes of a tensor as stored (numel x element size).
std::int64_t tensor_bytes(const Graph& graph, const std::string& name);

}  // namespace orchid
