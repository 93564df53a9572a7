// Attribute and constant-input parsing for the layout ops, shared by their shape
// functions and reference kernels so that both always see the same plan. Every
// function throws orchid::Error naming the node when the parameters are malformed.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/node.hpp"
#include "ir/tensor.hpp"

namespace orchid {

// Transpose: the `perm` attribute, or reversed axes; checked to be a permutation.
std::vector<std::int64_t> transpose_perm(const Node& node, std::size_t rank);

// Reshape: resolves 0 (copy, unless allowzero) and -1 (infer).
Shape reshape_target(const Node& node, const Shape& input, const Tensor& shape);

// Slice: per input axis, the first element and the step (1 for untouched axes).
struct SlicePlan {
  std::vector<std::int64_t> start;
  std::vector<std::int64_t> step;
  Shape output;
};
SlicePlan slice_plan(const Node& node, const Shape& input, const Tensor& starts, const Tensor& ends,
                     const Tensor* axes, const Tensor* steps);

// Pad: per axis, elements added before and after (negative crops).
struct PadPlan {
  std::vector<std::int64_t> before;
  std::vector<std::int64_t> after;
  Shape output;
};
PadPlan pad_plan(const Node& node, const Shape& input, const Tensor& pads, const Tensor* axes);

// Split: sizes of the outputs along `axis`.
std::vector<std::int64_t> split_sizes(const Node& node, std::int64_t dim, const Tensor* split,
                                      std::size_t num_outputs);

// Resize: per axis the scale used by the coordinate transform (the given scale, or
// out/in when sizes were given, or with keep_aspect_ratio_policy not_larger / not_smaller
// the one scale of all resized axes) and the output shape.
struct ResizePlan {
  std::vector<double> scales;
  Shape output;
};
// `scales` / `sizes` may be null or empty (numel 0) when absent.
ResizePlan resize_plan(const Node& node, const Shape& input, const Tensor* scales,
                       const Tensor* sizes);

// Resize, one axis: the source coordinate of output position `o` under a
// coordinate_transformation_mode; the nearest source index under a nearest_mode; the
// four cubic taps (index, weight) around a source coordinate. Shared by the reference
// kernel and device code generation, so both sample the same points.
double resize_source(const std::string& mode, std::int64_t o, double scale, std::int64_t in,
                     std::int64_t out);
std::int64_t resize_nearest_index(double x, const std::string& mode, std::int64_t in);
std::vector<std::pair<std::int64_t, double>> resize_cubic_taps(double src, std::int64_t in,
                                                               double a, bool exclude_outside);
// Antialiased linear or cubic Resize (antialias=1) on an axis downscaled by `scale` < 1:
// the filter (triangle of radius 1, or Keys cubic of radius 2 with coefficient `a`) is
// stretched by 1 / scale, so 2 * ceil(radius / scale) taps around `src` contribute; their weights
// are normalised to sum to 1 (after dropping taps outside the input when `exclude_outside`),
// indices clamped to the edge. The taps are those of ONNX's reference implementation, including its
// edge padding.
std::vector<std::pair<std::int64_t, double>> resize_antialias_taps(double src, std::int64_t in,
                                                                   double scale, bool cubic,
                                                                   double a, bool exclude_outside);

// Axes from an int64 tensor, normalised against `rank`, checked for duplicates.
std::vector<std::int64_t> normalized_axes(const Node& node, const std::vector<std::int64_t>& axes,
                                          std::int64_t rank);

}  // namespace orchid

namespace orchid {

// Col2Im (opset 18): input [N, C * prod(block), L] of sliding blocks summed back into an
// image [N, C, image...]; L must equal the number of block positions.
struct Col2ImPlan {
  Shape image, block;
  std::vector<std::int64_t> dilations, pads_begin, strides;
  std::vector<std::int64_t> positions;  // block positions per spatial axis
  std::int64_t channels = 0;
  Shape output;
};
Col2ImPlan col2im_plan(const Node& node, const Shape& input, const Tensor& image_shape,
                       const Tensor& block_shape);

}  // namespace orchid
