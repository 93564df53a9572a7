// The kernel families: each writes one device kernel for a stage of a plan kernel —
// a set of tensors stored at the coordinates of one iteration space, around at most
// one kind of anchor computation whose result is bound to a register:
//   map        elementwise chains and data movement, one thread per element
//   row        reductions over any axes: one block per output row, threads stride over
//              the reduced elements, partial results combined in shared memory; later
//              reductions of the same row (softmax, LayerNorm) reuse the block
//   window     MaxPool / AveragePool, one thread per output element
//   matmul     batched MatMul, 64x64 output tiles, K in steps of 16 through shared
//              memory, 4x4 outputs per thread; prologue inline in the tile loads
//   conv       Conv as an implicit GEMM per group (im2col addressing in the loads);
//              depthwise-like convolutions (< 16 outputs per group) one thread per output
//   conv-transpose  one thread per output element
// Every family strides over its space (grid-stride loops), so any launch size covers
// any tensor size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/kernel_writer.hpp"

namespace orchid::codegen {

enum class Family { Map, Row, Window, MatMul, Conv, ConvTranspose };

std::string family_name(Family family);
// The family a primitive anchors, or Family::Map for the ones computed inline.
Family anchor_family(const Node& node);

struct StageSpec {
  Family family = Family::Map;
  std::vector<const Node*> roots;  // anchor nodes computed here (Row: several, in order)
  std::vector<std::string> stores;
};

// Writes the kernel's body into `w`; returns the number of blocks to launch and sets
// `shared` to the kernel's shared-memory declarations.
std::int64_t write_stage(KernelWriter& w, const StageSpec& stage, std::string* shared);

// The reduce node's input shape and, per axis, whether it is reduced.
Shape row_space(const Graph& g, const Node& reduce, std::vector<bool>* reduced);

}  // namespace orchid::codegen
