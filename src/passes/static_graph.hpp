// Makes an imported graph fully static: infers every tensor's type and shape in
// topological order and folds every node whose inputs are all known at compile time
// (constants, or Shape/Size of a tensor with a static shape). This turns the shape
// plumbing exporters emit (Shape -> Gather -> Concat -> Reshape ...) into constants.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ir/graph.hpp"

namespace orchid {

struct StaticGraphOptions {
  // Nodes whose outputs would exceed this many elements are not folded (keeps memory
  // bounded when a constant Expand or Tile would materialise a huge tensor).
  std::int64_t max_folded_elements = std::int64_t{1} << 24;
};

struct StaticGraphStats {
  std::size_t nodes_before = 0;
  std::size_t folded_nodes = 0;
  std::size_t dead_nodes = 0;
  std::size_t nodes_after = 0;
};

StaticGraphStats make_static(Graph& graph, const StaticGraphOptions& options = {});

}  // namespace orchid
