// Which axes a Reduce* node reduces. Shared by the reduction shape functions and the
// reference kernels so both read the `axes` attribute / input the same way.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/node.hpp"
#include "ir/shape.hpp"
#include "ir/tensor.hpp"
#include "util/error.hpp"

namespace orchid::reduction_util {

struct ReductionAxes {
  std::vector<bool> reduced;  // per input dim
  bool noop = false;          // empty axes with noop_with_empty_axes=1: output = input
};

// `axes_input` is the value of the optional second input (opset 13+ ReduceSum, opset 18+
// for the rest) or nullptr when the node uses the `axes` attribute or reduces everything.
inline ReductionAxes resolve_reduction_axes(const Node& node, const Tensor* axes_input,
                                            std::int64_t rank) {
  if (axes_input && node.has_attribute("axes")) {
    fail("{}: axes given both as attribute and as input", node.describe());
  }
  std::vector<std::int64_t> axes =
      axes_input ? axes_input->to_int64s() : node.attr_ints("axes", {});
  ReductionAxes result;
  result.reduced.assign(static_cast<std::size_t>(rank), false);
  if (axes.empty()) {
    if (node.attr_int("noop_with_empty_axes", 0) != 0) {
      result.noop = true;
    } else {
      result.reduced.assign(static_cast<std::size_t>(rank), true);
    }
    return result;
  }
  for (std::int64_t axis : axes) {
    const auto a = static_cast<std::size_t>(normalize_axis(axis, rank, node.describe()));
    if (a >= result.reduced.size()) {
      fail("{}: axis {} is out of range for rank {}", node.describe(), axis, rank);
    }
    if (result.reduced[a]) fail("{}: axis {} is listed twice", node.describe(), axis);
    result.reduced[a] = true;
  }
  return result;
}

// Input shape with reduced dims set to 1 (the keepdims=1 output shape).
inline Shape keepdims_shape(const Shape& in, const ReductionAxes& axes) {
  Shape out = in;
  if (axes.noop) return out;
  for (std::size_t d = 0; d < in.size(); ++d) {
    if (axes.reduced[d]) out[d] = 1;
  }
  return out;
}

}  // namespace orchid::reduction_util
