// How a layer's linear op (Conv, or Gemm / MatMul with a constant 2-D weight) is split
// over the `parts` ranks of a group, as each rank runs it: a one-node graph with its
// slice of the weights as constants, fed its block of the op's activation input, giving
// a partial result the group combines.
//  - out-channel: every part reads all of x and computes a block of output channels
//    (Conv weight rows, Gemm/MatMul weight columns); the parts are concatenated.
//  - in-channel: every part reads a block of x's channels (Conv axis 1, Gemm/MatMul the
//    last axis) with the matching weight block, bias on part 0 only; the parts are summed.
//  - spatial: every part computes a block of output rows (Conv: axis 2 of NCHW, reading
//    its input rows plus the halo the kernel needs, with the pads adjusted so the block
//    is exact; Gemm/MatMul: a block of x's rows, no halo); the parts are concatenated.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.hpp"
#include "mapping/sharding.hpp"

namespace orchid::distributed {

struct OpShard {
  Graph graph;       // input: node.inputs[0] (the block), output: node.outputs[0] (the part)
  int in_axis = -1;  // axis of x the part reads a block of; -1: all of x
  std::int64_t in_begin = 0, in_end = 0;
  int out_axis = -1;  // axis the parts are concatenated on; -1: the parts are summed
  Shape in_shape, out_shape;
};

// Whether node `node` of `g` can be split `parts` ways by `s` (otherwise the group's
// leader runs the layer whole). Needs float32, static shapes and at least one unit of
// the split dimension per part.
bool can_shard_op(const Graph& g, const Node& node, mapping::Strategy s, int parts);

// Part `part` of that split (can_shard_op must hold).
OpShard shard_op(const Graph& g, const Node& node, mapping::Strategy s, int part, int parts);

}  // namespace orchid::distributed
