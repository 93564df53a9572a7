// The reference interpreter: runs a typed graph node by node with the reference
// kernels. Its outputs define "correct" for every later stage.
#pragma once

#include <map>
#include <string>

#include "ir/graph.hpp"

namespace orchid {

using TensorMap = std::map<std::string, Tensor>;

// Runs one node on the given input values; outputs get the types the graph records.
// Outputs the graph marks dynamic are typed from the values at hand: the node's shape
// function runs on the actual inputs (or the kernel sizes them, for NonZero and
// NonMaxSuppression), and an If runs the branch its condition picks.
std::vector<Tensor> run_reference_node(const Graph& graph, const Node& node,
                                       std::span<const Tensor* const> inputs);

class ReferenceInterpreter {
 public:
  // The graph must be typed (shape inference done) and valid.
  explicit ReferenceInterpreter(const Graph& graph);

  // `inputs` must hold every graph input with its declared dtype and shape. Returns the
  // graph outputs by name. Intermediates are freed after their last use.
  TensorMap run(const TensorMap& inputs) const;

 private:
  const Graph& graph_;
  std::vector<std::size_t> order_;
};

}  // namespace orchid
