// Folds constant per-channel affine operations into the weights of the linear op they
// follow, as ONNX Runtime does before it runs a model: y = (W * x + b) * s + t becomes
// y = (W * s) * x + (b * s + t). What folds, after a Conv (per output channel), a Gemm
// (per output column) or a MatMul with constant 2-D weights (per output column, Mul / Div
// only: a MatMul has no bias input):
//   BatchNormalization (inference form, constant statistics), Mul / Div by a constant,
//   Add / Sub of a constant (x - c; c - x is left alone).
// Only when the linear op's result has no other reader and is not a graph output. The
// original weights stay untouched (they may be shared); folded copies get new names and
// remove_dead_nodes drops what nothing reads any more. Folding changes float rounding
// only (checked against the unfolded graph on the reference interpreter in the tests).
#pragma once

#include <cstddef>

#include "ir/graph.hpp"

namespace orchid {

struct AffineFoldingStats {
  std::size_t folded_nodes = 0;  // BatchNormalization / Mul / Add / Sub / Div removed
};

AffineFoldingStats fold_affine_into_linear(Graph& graph);

}  // namespace orchid
