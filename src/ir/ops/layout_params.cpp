#include "ir/ops/layout_params.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/checked_math.hpp"
#include "util/error.hpp"

namespace orchid {

std::vector<std::int64_t> normalized_axes(const Node& node, const std::vector<std::int64_t>& axes,
                                          std::int64_t rank) {
  std::vector<std::int64_t> out;
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (auto a : axes) {
    if (a < -rank || a >= rank) {
      fail("{}: axis {} is out of range for rank {}", node.describe(), a, rank);
    }
    const std::int64_t n = a < 0 ? a + rank : a;
    if (seen[static_cast<std::size_t>(n)]) {
      fail("{}: axis {} appears twice in [{}]", node.describe(), n, fmt::join(axes, ","));
    }
    seen[static_cast<std::size_t>(n)] = true;
    out.push_back(n);
  }
  return out;
}

std::vector<std::int64_t> transpose_perm(const Node& node, std::size_t rank) {
  std::vector<std::int64_t> reversed(rank);
  for (std::size_t i = 0; i < rank; ++i) reversed[i] = static_cast<std::int64_t>(rank - 1 - i);
  std::vector<std::int64_t> perm = node.attr_ints("perm", reversed);
  if (perm.size() != rank) {
    fail("{}: perm [{}] has {} entries for an input of rank {}", node.describe(),
         fmt::join(perm, ","), perm.size(), rank);
  }
  std::vector<bool> seen(rank, false);
  for (auto p : perm) {
    if (p < 0 || p >= static_cast<std::int64_t>(rank) || seen[static_cast<std::size_t>(p)]) {
      fail("{}: perm [{}] is not a permutation of 0..{}", node.describe(), fmt::join(perm, ","),
           rank - 1);
    }
    seen[static_cast<std::size_t>(p)] = true;
  }
  return perm;
}

Shape reshape_target(const Node& node, const Shape& input, const Tensor& shape) {
  if (shape.rank() != 1) fail("{}: shape input must be 1-D", node.describe());
  const bool allowzero = node.attr_int("allowzero", 0) != 0;
  Shape out = shape.to_int64s();
  std::int64_t infer_at = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0 && !allowzero) {
      if (i >= input.size()) {
        fail("{}: shape [{}] copies dimension {} but the input has rank {}", node.describe(),
             fmt::join(out, ","), i, input.size());
      }
      out[i] = input[i];
    }
    if (out[i] == -1) {
      if (infer_at >= 0)
        fail("{}: shape [{}] has more than one -1", node.describe(), fmt::join(out, ","));
      infer_at = static_cast<std::int64_t>(i);
      continue;
    }
    if (out[i] < 0)
      fail("{}: shape [{}] has a negative dimension", node.describe(), fmt::join(out, ","));
    known = checked_mul(known, out[i], node.describe() + ": shape");
  }
  const std::int64_t numel = shape_numel(input);
  if (infer_at >= 0) {
    if (known == 0 || numel % known != 0) {
      fail("{}: cannot infer the -1 in shape [{}] for an input of {} elements", node.describe(),
           fmt::join(shape.to_int64s(), ","), numel);
    }
    out[static_cast<std::size_t>(infer_at)] = numel / known;
  } else if (known != numel) {
    fail("{}: cannot reshape {} ({} elements) to {}", node.describe(), shape_to_string(input),
         numel, shape_to_string(out));
  }
  return out;
}

SlicePlan slice_plan(const Node& node, const Shape& input, const Tensor& starts, const Tensor& ends,
                     const Tensor* axes, const Tensor* steps) {
  const std::int64_t rank = static_cast<std::int64_t>(input.size());
  const auto s = starts.to_int64s();
  const auto e = ends.to_int64s();
  std::vector<std::int64_t> ax;
  if (axes && axes->numel() > 0) {
    ax = normalized_axes(node, axes->to_int64s(), rank);
  } else {
    // Without axes, starts[i] is for axis i: more starts than axes is malformed.
    if (static_cast<std::int64_t>(s.size()) > rank) {
      fail("{}: {} starts but no axes for a rank-{} input", node.describe(), s.size(), rank);
    }
    for (std::size_t i = 0; i < s.size(); ++i) ax.push_back(static_cast<std::int64_t>(i));
  }
  std::vector<std::int64_t> st(s.size(), 1);
  if (steps && steps->numel() > 0) st = steps->to_int64s();
  if (e.size() != s.size() || ax.size() != s.size() || st.size() != s.size()) {
    fail("{}: starts, ends, axes and steps must have equal lengths ({}, {}, {}, {})",
         node.describe(), s.size(), e.size(), ax.size(), st.size());
  }
  SlicePlan plan;
  plan.start.assign(input.size(), 0);
  plan.step.assign(input.size(), 1);
  plan.output = input;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const std::size_t a = static_cast<std::size_t>(ax[i]);
    const std::int64_t dim = input[a];
    const std::int64_t step = st[i];
    if (step == 0) fail("{}: step on axis {} is zero", node.describe(), a);
    // ONNX clamping: negatives count from the end, then clamp to the valid range for
    // the direction of travel ([0, dim] forward, [-1, dim-1] backward for the end).
    auto wrap = [dim](std::int64_t v) {
      if (v < 0) v = v < std::numeric_limits<std::int64_t>::min() + dim ? -1 : v + dim;
      return v;
    };
    std::int64_t b = wrap(s[i]);
    std::int64_t f = wrap(e[i]);
    if (step > 0) {
      b = std::clamp<std::int64_t>(b, 0, dim);
      f = std::clamp<std::int64_t>(f, 0, dim);
    } else {
      b = std::clamp<std::int64_t>(b, 0, dim - 1);
      f = std::clamp<std::int64_t>(f, -1, dim - 1);
    }
    std::int64_t count = 0;
    // ceil(distance / |step|) written so that a step of INT64_MAX or INT64_MIN cannot overflow.
    if (step > 0 && f > b) count = (f - b - 1) / step + 1;
    if (step < 0 && b > f) count = 1 - (b - f - 1) / step;
    plan.start[a] = count > 0 ? b : 0;
    plan.step[a] = step;
    plan.output[a] = count;
  }
  return plan;
}

PadPlan pad_plan(const Node& node, const Shape& input, const Tensor& pads, const Tensor* axes) {
  const std::int64_t rank = static_cast<std::int64_t>(input.size());
  std::vector<std::int64_t> ax;
  if (axes && axes->numel() > 0) {
    ax = normalized_axes(node, axes->to_int64s(), rank);
  } else {
    for (std::int64_t i = 0; i < rank; ++i) ax.push_back(i);
  }
  const auto p = pads.to_int64s();
  if (p.size() != 2 * ax.size()) {
    fail("{}: pads has {} values, expected {}", node.describe(), p.size(), 2 * ax.size());
  }
  PadPlan plan;
  plan.before.assign(input.size(), 0);
  plan.after.assign(input.size(), 0);
  plan.output = input;
  for (std::size_t i = 0; i < ax.size(); ++i) {
    const std::size_t a = static_cast<std::size_t>(ax[i]);
    plan.before[a] = p[i];
    plan.after[a] = p[i + ax.size()];
    plan.output[a] = checked_add(checked_add(input[a], plan.before[a], node.describe() + ": pads"),
                                 plan.after[a], node.describe() + ": pads");
    if (plan.output[a] < 0) {
      fail("{}: pads [{}] crop axis {} of size {} below zero", node.describe(), fmt::join(p, ","),
           a, input[a]);
    }
  }
  return plan;
}

std::vector<std::int64_t> split_sizes(const Node& node, std::int64_t dim, const Tensor* split,
                                      std::size_t num_outputs) {
  std::vector<std::int64_t> sizes;
  if (split && split->numel() > 0) {
    sizes = split->to_int64s();
  } else if (node.has_attribute("split")) {  // pre-13 attribute form, kept for leniency
    sizes = node.attr_ints("split", {});
  }
  if (!sizes.empty()) {
    std::int64_t total = 0;
    for (auto v : sizes) {
      if (v < 0) fail("{}: split [{}] has a negative size", node.describe(), fmt::join(sizes, ","));
      total += v;
    }
    if (sizes.size() != num_outputs || total != dim) {
      fail("{}: split [{}] does not divide a dimension of {} into {} outputs", node.describe(),
           fmt::join(sizes, ","), dim, num_outputs);
    }
    return sizes;
  }
  const auto n = static_cast<std::int64_t>(
      node.attr_int("num_outputs", static_cast<std::int64_t>(num_outputs)));
  if (n != static_cast<std::int64_t>(num_outputs) || n < 1) {
    fail("{}: num_outputs {} but the node has {} outputs", node.describe(), n, num_outputs);
  }
  if (dim % n == 0) return std::vector<std::int64_t>(static_cast<std::size_t>(n), dim / n);
  if (!node.has_attribute("num_outputs")) {
    fail("{}: dimension {} cannot be split equally into {} outputs", node.describe(), dim, n);
  }
  // Opset 18 rule: chunks of ceil(dim / n), the last one smaller.
  const std::int64_t chunk = (dim + n - 1) / n;
  for (std::int64_t i = 0; i < n; ++i) {
    sizes.push_back(std::clamp<std::int64_t>(dim - i * chunk, 0, chunk));
  }
  return sizes;
}

ResizePlan resize_plan(const Node& node, const Shape& input, const Tensor* scales,
                       const Tensor* sizes) {
  const std::int64_t rank = static_cast<std::int64_t>(input.size());
  const bool has_scales = scales && scales->numel() > 0;
  const bool has_sizes = sizes && sizes->numel() > 0;
  if (has_scales == has_sizes) {
    fail("{}: exactly one of scales and sizes must be given", node.describe());
  }
  std::vector<std::int64_t> ax;
  if (node.has_attribute("axes")) {
    ax = normalized_axes(node, node.attr_ints("axes", {}), rank);
  } else {
    for (std::int64_t i = 0; i < rank; ++i) ax.push_back(i);
  }
  ResizePlan plan;
  plan.scales.assign(input.size(), 1.0);
  plan.output = input;
  const std::int64_t given = has_scales ? scales->numel() : sizes->numel();
  if (given != static_cast<std::int64_t>(ax.size())) {
    fail("{}: {} has {} values for {} axes", node.describe(), has_scales ? "scales" : "sizes",
         given, ax.size());
  }
  // keep_aspect_ratio_policy (opset 18) reinterprets `sizes` only: with not_larger /
  // not_smaller every resized axis takes one scale, the smallest / largest sizes[i] /
  // input[axes[i]], and its length is that scale times the input length rounded half up.
  const std::string policy = node.attr_string("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller") {
    fail("{}: keep_aspect_ratio_policy '{}' is not one of stretch, not_larger, not_smaller",
         node.describe(), policy);
  }
  if (has_sizes && policy != "stretch") {
    double common = 0;
    for (std::size_t i = 0; i < ax.size(); ++i) {
      const std::size_t a = static_cast<std::size_t>(ax[i]);
      const std::int64_t n = sizes->get_as_int64(static_cast<std::int64_t>(i));
      if (n < 0) fail("{}: size {} on axis {} is negative", node.describe(), n, a);
      if (input[a] == 0) {
        fail("{}: keep_aspect_ratio_policy '{}' cannot scale empty axis {}", node.describe(),
             policy, a);
      }
      const double ratio = static_cast<double>(n) / static_cast<double>(input[a]);
      if (i == 0 || (policy == "not_larger" ? ratio < common : ratio > common)) common = ratio;
    }
    for (const std::int64_t axis : ax) {
      const auto a = static_cast<std::size_t>(axis);
      const double size = std::floor(common * static_cast<double>(input[a]) + 0.5);
      if (!(size <= static_cast<double>(kMaxElements))) {
        fail("{}: sizes with keep_aspect_ratio_policy '{}' give too large an output on axis {}",
             node.describe(), policy, a);
      }
      plan.scales[a] = common;
      plan.output[a] = static_cast<std::int64_t>(size);
    }
    return plan;
  }
  for (std::size_t i = 0; i < ax.size(); ++i) {
    const std::size_t a = static_cast<std::size_t>(ax[i]);
    if (has_scales) {
      // The float scale times the size in double, floored, as the ONNX reference does.
      const double sc = scales->get_as_double(static_cast<std::int64_t>(i));
      if (!(sc > 0)) fail("{}: scale {} on axis {} must be positive", node.describe(), sc, a);
      plan.scales[a] = sc;
      const double size = std::floor(static_cast<double>(input[a]) * sc);
      if (!(size <= static_cast<double>(kMaxElements))) {
        fail("{}: scale {} on axis {} gives too large an output", node.describe(), sc, a);
      }
      plan.output[a] = static_cast<std::int64_t>(size);
    } else {
      const std::int64_t n = sizes->get_as_int64(static_cast<std::int64_t>(i));
      if (n < 0) fail("{}: size {} on axis {} is negative", node.describe(), n, a);
      plan.output[a] = n;
      plan.scales[a] = input[a] > 0 ? static_cast<double>(n) / static_cast<double>(input[a]) : 1.0;
    }
  }
  return plan;
}

// Resize: input coordinate of output position o on one axis.
double resize_source(const std::string& mode, std::int64_t o, double scale, std::int64_t in,
                     std::int64_t out) {
  const double x = static_cast<double>(o);
  if (mode == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") {
    // The resized length is in * scale before flooring, as in ONNX's reference (a
    // 4 -> 2 downsample by scale 0.6 divides by 1.4, not 1); with sizes it is `out`.
    const double resized = static_cast<double>(in) * scale;
    return out == 1 ? 0.0 : x * static_cast<double>(in - 1) / (resized - 1.0);
  }
  if (mode == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (mode == "half_pixel_symmetric") {
    // Opset 19: half_pixel, shifted so that the centre of the input maps to the centre
    // of the output when the output length was floored (out < in * scale).
    const double adjustment = static_cast<double>(out) / (static_cast<double>(in) * scale);
    const double offset = static_cast<double>(in) / 2.0 * (1.0 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  return x / scale;  // asymmetric
}

std::int64_t resize_nearest_index(double x, const std::string& mode, std::int64_t in) {
  double r;
  if (mode == "floor") {
    r = std::floor(x);
  } else if (mode == "ceil") {
    r = std::ceil(x);
  } else if (x - std::floor(x) == 0.5) {
    r = mode == "round_prefer_ceil" ? std::ceil(x) : std::floor(x);
  } else {
    r = std::round(x);
  }
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(r), 0, in - 1);
}

// Cubic convolution (Keys) weight of a tap at distance x, coefficient a.
static double cubic_weight(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// The four taps around source coordinate `src`: indices clamped to the edge, or, with
// exclude_outside, taps outside the input dropped and the rest renormalised.
std::vector<std::pair<std::int64_t, double>> resize_cubic_taps(double src, std::int64_t in,
                                                               double a, bool exclude_outside) {
  const double fl = std::floor(src);
  const double t = src - fl;
  const auto base = static_cast<std::int64_t>(fl);
  std::vector<std::pair<std::int64_t, double>> taps;
  double total = 0;
  for (std::int64_t k = -1; k <= 2; ++k) {
    const std::int64_t index = base + k;
    double w = cubic_weight(static_cast<double>(k) - t, a);
    if (exclude_outside && (index < 0 || index >= in)) w = 0;
    total += w;
    taps.emplace_back(std::clamp<std::int64_t>(index, 0, in - 1), w);
  }
  if (exclude_outside && total != 0) {
    for (auto& tap : taps) tap.second /= total;
  }
  return taps;
}

std::vector<std::pair<std::int64_t, double>> resize_antialias_taps(double src, std::int64_t in,
                                                                   double scale, bool cubic,
                                                                   double a, bool exclude_outside) {
  const double radius = cubic ? 2.0 : 1.0;
  scale = std::min(scale, 1.0);  // upscaling is not antialiased
  // Taps base + k, k = first .. 1 - first, around base = ceil(src) - 1: the source
  // coordinate lies at ratio in (0, 1] after base (an integer src sits on tap 1).
  const auto first = static_cast<std::int64_t>(std::floor(-radius / scale)) + 1;
  const std::int64_t count = 2 - 2 * first;
  const double base_d = std::ceil(src) - 1.0;
  const double ratio = src - base_d;
  // The taps are read from the input padded by count / 2 = 1 - first edge copies on each
  // side; a window reaching past that padding slides back inside it (weights unchanged).
  const auto base = std::clamp<std::int64_t>(static_cast<std::int64_t>(base_d), -1, in - 1);
  std::vector<std::pair<std::int64_t, double>> taps;
  taps.reserve(static_cast<std::size_t>(count));
  double total = 0;
  for (std::int64_t k = first; k < first + count; ++k) {
    const double x = std::fabs((static_cast<double>(k) - ratio) * scale);
    const double w = cubic ? cubic_weight(x, a) : std::max(0.0, 1.0 - x);
    taps.emplace_back(base + k, w);
    total += w;
  }
  if (total != 0) {
    for (auto& tap : taps) tap.second /= total;
  }
  if (exclude_outside) {
    total = 0;
    for (auto& [index, w] : taps) {
      if (index < 0 || index >= in) w = 0;
      total += w;
    }
    if (total != 0) {
      for (auto& tap : taps) tap.second /= total;
    }
  }
  for (auto& tap : taps) tap.first = std::clamp<std::int64_t>(tap.first, 0, in - 1);
  return taps;
}

}  // namespace orchid

namespace orchid {

Col2ImPlan col2im_plan(const Node& node, const Shape& input, const Tensor& image_shape,
                       const Tensor& block_shape) {
  Col2ImPlan p;
  p.image = image_shape.to_int64s();
  p.block = block_shape.to_int64s();
  const std::size_t dims = p.image.size();
  if (dims == 0 || p.block.size() != dims) {
    fail("{}: image_shape {} and block_shape {} must be non-empty and of one length",
         node.describe(), shape_to_string(p.image), shape_to_string(p.block));
  }
  if (input.size() != 3)
    fail("{}: input must be [N, C * prod(block), L], got {}", node.describe(),
         shape_to_string(input));
  p.dilations = node.attr_ints("dilations", std::vector<std::int64_t>(dims, 1));
  p.strides = node.attr_ints("strides", std::vector<std::int64_t>(dims, 1));
  const auto pads = node.attr_ints("pads", std::vector<std::int64_t>(2 * dims, 0));
  if (p.dilations.size() != dims || p.strides.size() != dims || pads.size() != 2 * dims) {
    fail("{}: dilations, strides and pads must have {}, {} and {} values", node.describe(), dims,
         dims, 2 * dims);
  }
  std::int64_t block_size = 1, count = 1;
  for (std::size_t d = 0; d < dims; ++d) {
    if (p.block[d] <= 0 || p.image[d] <= 0 || p.dilations[d] <= 0 || p.strides[d] <= 0) {
      fail("{}: image, block, dilations and strides must be positive", node.describe());
    }
    const std::int64_t span = p.dilations[d] * (p.block[d] - 1) + 1;
    const std::int64_t room = p.image[d] + pads[d] + pads[d + dims] - span;
    if (room < 0) fail("{}: block {} does not fit the padded image", node.describe(), d);
    p.positions.push_back(room / p.strides[d] + 1);
    block_size *= p.block[d];
    count *= p.positions.back();
  }
  p.pads_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(dims));
  if (input[1] % block_size != 0 || input[2] != count) {
    fail("{}: input {} must be [N, C * {}, {}]", node.describe(), shape_to_string(input),
         block_size, count);
  }
  p.channels = input[1] / block_size;
  p.output = {input[0], p.channels};
  p.output.insert(p.output.end(), p.image.begin(), p.image.end());
  return p;
}

}  // namespace orchid
