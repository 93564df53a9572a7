// Sliding-window geometry shared by Conv, ConvTranspose and the pooling ops. The shape
// functions and the reference kernels both call these, so the pads that auto_pad
// resolves to and the output sizes can never disagree between import and execution.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/node.hpp"

namespace orchid {

struct WindowGeometry {
  // One entry per spatial axis.
  std::vector<std::int64_t> input;
  std::vector<std::int64_t> kernel;
  std::vector<std::int64_t> strides;
  std::vector<std::int64_t> dilations;
  std::vector<std::int64_t> pad_begin;  // may be negative for ConvTranspose output_shape
  std::vector<std::int64_t> pad_end;
  std::vector<std::int64_t> output;

  std::size_t rank() const { return input.size(); }
};

// Conv and pooling: reads strides, dilations, pads and auto_pad from `node`; `kernel`
// comes from the weight (Conv) or kernel_shape (pooling). ceil_mode only for pooling.
// Throws orchid::Error naming the node for malformed attributes or an empty output.
WindowGeometry window_geometry(const Node& node, const std::vector<std::int64_t>& input_spatial,
                               const std::vector<std::int64_t>& kernel, bool ceil_mode);

// ConvTranspose: also output_padding and output_shape, which (like auto_pad) turn into
// pads, possibly negative ones.
WindowGeometry conv_transpose_geometry(const Node& node,
                                       const std::vector<std::int64_t>& input_spatial,
                                       const std::vector<std::int64_t>& kernel);

}  // namespace orchid
