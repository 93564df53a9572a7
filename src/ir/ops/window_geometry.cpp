#include "ir/ops/window_geometry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/checked_math.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

// Floor division that is also right for negative numerators.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return -floor_div(-a, b);
}

std::vector<std::int64_t> per_axis(const Node& node, const char* key, std::size_t rank,
                                   std::int64_t fallback) {
  std::vector<std::int64_t> v = node.attr_ints(key, std::vector<std::int64_t>(rank, fallback));
  if (v.size() != rank) {
    fail("{}: attribute '{}' has {} values [{}] but the op has {} spatial axes", node.describe(),
         key, v.size(), fmt::join(v, ","), rank);
  }
  for (auto x : v) {
    if (x < 1)
      fail("{}: attribute '{}' must be positive, got [{}]", node.describe(), key,
           fmt::join(v, ","));
  }
  return v;
}

// Fills strides, dilations, explicit pads; leaves auto_pad to the caller.
WindowGeometry common(const Node& node, const std::vector<std::int64_t>& input_spatial,
                      const std::vector<std::int64_t>& kernel) {
  const std::size_t rank = input_spatial.size();
  if (kernel.size() != rank) {
    fail("{}: kernel has {} spatial axes but the input has {}", node.describe(), kernel.size(),
         rank);
  }
  for (auto k : kernel) {
    if (k < 1)
      fail("{}: kernel shape [{}] must be positive", node.describe(), fmt::join(kernel, ","));
  }
  WindowGeometry g;
  g.input = input_spatial;
  g.kernel = kernel;
  g.strides = per_axis(node, "strides", rank, 1);
  g.dilations = per_axis(node, "dilations", rank, 1);
  const auto pads = node.attr_ints("pads", std::vector<std::int64_t>(2 * rank, 0));
  if (pads.size() != 2 * rank) {
    fail("{}: attribute 'pads' has {} values [{}], expected {}", node.describe(), pads.size(),
         fmt::join(pads, ","), 2 * rank);
  }
  g.pad_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(rank));
  g.pad_end.assign(pads.begin() + static_cast<std::ptrdiff_t>(rank), pads.end());
  g.output.assign(rank, 0);
  return g;
}

// (kernel - 1) * dilation + 1, checked: dilations come straight from the file.
std::int64_t window_extent(const Node& node, std::int64_t kernel, std::int64_t dilation) {
  return checked_add(checked_mul(kernel - 1, dilation, node.describe() + ": dilated kernel"), 1,
                     node.describe() + ": dilated kernel");
}

std::string auto_pad_of(const Node& node) {
  const std::string mode = node.attr_string("auto_pad", "NOTSET");
  if (mode != "NOTSET" && mode != "SAME_UPPER" && mode != "SAME_LOWER" && mode != "VALID") {
    unsupported("{}: unsupported: auto_pad '{}'", node.describe(), mode);
  }
  return mode;
}

}  // namespace

WindowGeometry window_geometry(const Node& node, const std::vector<std::int64_t>& input_spatial,
                               const std::vector<std::int64_t>& kernel, bool ceil_mode) {
  WindowGeometry g = common(node, input_spatial, kernel);
  const std::string auto_pad = auto_pad_of(node);
  for (std::size_t i = 0; i < g.rank(); ++i) {
    const std::int64_t extent = window_extent(node, g.kernel[i], g.dilations[i]);
    const std::string context = node.describe() + ": spatial axis " + std::to_string(i);
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // Output covers ceil(in / stride); the odd pad goes to the end for SAME_UPPER.
      g.output[i] = ceil_div(g.input[i], g.strides[i]);
      // (output - 1) * stride <= input, so only the extent can overflow the sum.
      const std::int64_t total = std::max<std::int64_t>(
          0, checked_add((g.output[i] - 1) * g.strides[i], extent, context) - g.input[i]);
      const std::int64_t small = total / 2;
      g.pad_begin[i] = auto_pad == "SAME_UPPER" ? small : total - small;
      g.pad_end[i] = total - g.pad_begin[i];
      continue;
    }
    if (auto_pad == "VALID") g.pad_begin[i] = g.pad_end[i] = 0;
    if (g.pad_begin[i] < 0 || g.pad_end[i] < 0) {
      fail("{}: negative pads are not allowed (axis {}: {}, {})", node.describe(), i,
           g.pad_begin[i], g.pad_end[i]);
    }
    const std::int64_t span =
        checked_add(checked_add(g.input[i], g.pad_begin[i], context), g.pad_end[i], context) -
        extent;
    if (span < 0) {
      fail("{}: window of extent {} does not fit spatial axis {} of size {} with pads {}+{}",
           node.describe(), extent, i, g.input[i], g.pad_begin[i], g.pad_end[i]);
    }
    if (ceil_mode) {
      g.output[i] = ceil_div(span, g.strides[i]) + 1;
      // A last window that would start inside the end padding is dropped (as PyTorch
      // and the ONNX reference do).
      if ((g.output[i] - 1) * g.strides[i] >= g.input[i] + g.pad_begin[i]) --g.output[i];
    } else {
      g.output[i] = span / g.strides[i] + 1;
    }
  }
  return g;
}

WindowGeometry conv_transpose_geometry(const Node& node,
                                       const std::vector<std::int64_t>& input_spatial,
                                       const std::vector<std::int64_t>& kernel) {
  WindowGeometry g = common(node, input_spatial, kernel);
  const std::string auto_pad = auto_pad_of(node);
  const std::size_t rank = g.rank();
  const auto output_padding = node.attr_ints("output_padding", std::vector<std::int64_t>(rank, 0));
  if (output_padding.size() != rank) {
    fail("{}: attribute 'output_padding' has {} values, expected {}", node.describe(),
         output_padding.size(), rank);
  }
  std::vector<std::int64_t> output_shape = node.attr_ints("output_shape", {});
  // output_shape may also carry the batch and channel dimensions; only the spatial tail counts.
  if (output_shape.size() == rank + 2)
    output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  if (!output_shape.empty() && output_shape.size() != rank) {
    fail("{}: attribute 'output_shape' has {} values, expected {}", node.describe(),
         output_shape.size(), rank);
  }
  for (std::size_t i = 0; i < rank; ++i) {
    if (output_padding[i] < 0 || output_padding[i] >= std::max(g.strides[i], g.dilations[i])) {
      fail("{}: output_padding {} on axis {} must be in [0, max(stride, dilation))",
           node.describe(), output_padding[i], i);
    }
    const std::string context = node.describe() + ": spatial axis " + std::to_string(i);
    const std::int64_t extent = window_extent(node, g.kernel[i], g.dilations[i]);
    const std::int64_t full = checked_add(
        checked_add(checked_mul(g.strides[i], g.input[i] - 1, context), output_padding[i], context),
        extent, context);
    std::int64_t target = -1;
    if (!output_shape.empty()) {
      target = output_shape[i];
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      target = checked_mul(g.input[i], g.strides[i], context);
    }
    if (target >= 0) {
      // ONNX: SAME_UPPER puts the odd pad at the end, otherwise at the beginning. Total
      // padding may be negative (output_shape larger than the full result): zeros then.
      const std::int64_t total = full - target;
      const std::int64_t half = floor_div(total, 2);
      if (auto_pad == "SAME_UPPER") {
        g.pad_begin[i] = half;
        g.pad_end[i] = total - half;
      } else {
        g.pad_begin[i] = total - half;
        g.pad_end[i] = half;
      }
    } else if (auto_pad == "VALID") {
      g.pad_begin[i] = g.pad_end[i] = 0;
    } else if (g.pad_begin[i] < 0 || g.pad_end[i] < 0) {
      fail("{}: negative pads are not allowed (axis {}: {}, {})", node.describe(), i,
           g.pad_begin[i], g.pad_end[i]);
    }
    // Both pads are now at most |full| / 2 + 1 or non-negative attributes: checked.
    g.output[i] = full - checked_add(g.pad_begin[i], g.pad_end[i], context);
    if (g.output[i] < 1) {
      fail("{}: output size {} on spatial axis {} is not positive", node.describe(), g.output[i],
           i);
    }
  }
  return g;
}

}  // namespace orchid
