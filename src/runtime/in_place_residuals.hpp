// A convolution whose epilogue adds a residual that nothing reads after it (ResNet's
// bottleneck ends: Conv + bias + Add(shortcut) + Relu) can write its result over that
// residual. oneDNN then adds the residual as a sum post-op, reading and writing one buffer,
// instead of a binary post-op reading a second tensor of the result's size, and for the
// latter oneDNN 2.6 runs 1x1 convolutions on its older jit_1x1 kernel rather than
// brgconv_1x1: ResNet-50's expansions with the shortcut, 2 threads, AVX-512, took 334 /
// 299 / 265 / 325 us as binary and 292 / 259 / 262 / 273 us as sum (64->256 at 56x56 up
// to 512->2048 at 7x7; AVX2: 1-13 % less as sum too).
//
// The CPU executor lays out its arena again with each such result placed over its
// residual (one block for the chain of them); the plan's own arena, which the other
// backends use, is left as it is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ir/graph.hpp"
#include "orchestrate/plan.hpp"

namespace orchid {

struct ArenaLayout {
  std::vector<ArenaSlot> slots;               // the plan's, with offsets placed again
  std::int64_t bytes = 0;                     // the arena's peak
  std::vector<std::size_t> in_place_kernels;  // those writing a result over its residual
};

// The arena of `plan` (over `graph`, its primitive graph) with results placed over their
// residuals where a kernel is one convolution with its epilogue, the residual is added by
// it as a post-op (match_epilogue), is read by nothing else in the kernel and by no later
// kernel, and has the result's shape and type.
ArenaLayout in_place_residuals(const Graph& graph, const Plan& plan);

}  // namespace orchid
