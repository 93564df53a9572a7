// Makes an imported graph fully static: infers every tensor's type and shape in
// topological order and folds every node whose inputs are all known at compile time
// (constants, or Shape/Size of a tensor with a static shape). This turns the shape
// plumbing exporters emit (Shape -> Gather -> Concat -> Reshape ...) into constants.
// An If whose condition folds to a constant is replaced by the branch it takes.
// Where values decide sizes (NonZero, NonMaxSuppression, an If on a run-time condition,
// a shape input computed from data), the outputs and everything computed from them are
// left dynamic: the reference interpreter sizes them per run; optimizers refuse them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ir/graph.hpp"

namespace orchid {

struct StaticGraphOptions {
  // Nodes whose outputs would exceed this many elements are not folded (keeps memory
  // bounded when a constant Expand or Tile would materialise a huge tensor), unless
  // LargeFolds admits them.
  std::int64_t max_folded_elements = std::int64_t{1} << 24;
};

struct StaticGraphStats {
  std::size_t nodes_before = 0;
  std::size_t folded_nodes = 0;
  std::size_t dead_nodes = 0;
  std::size_t nodes_after = 0;
  std::size_t inlined_branches = 0;  // If nodes replaced by their constant-condition branch
  std::size_t dynamic_nodes = 0;     // nodes left with data-dependent output shapes
};

StaticGraphStats make_static(Graph& graph, const StaticGraphOptions& options = {});

// Folds of constant nodes past the size limit (here and in fission): one is admitted when
// its result is no larger than the node's largest input (a weight's Transpose: ALBERT's
// 4096 x 16384 ones otherwise ran in every inference), while such folds together make no
// more bytes than `graph`'s constants held when counting began, so they at most double
// them (a hostile model may Transpose one large weight a hundred times).
class LargeFolds {
 public:
  explicit LargeFolds(const Graph& graph);
  // Whether a result of `elements` elements and `bytes` bytes, from inputs of which the
  // largest has `largest_input` elements, may fold; counted when it may.
  bool admit(std::int64_t elements, std::int64_t bytes, std::int64_t largest_input);

 private:
  std::int64_t allowance_ = 0;
};

}  // namespace orchid
