// Moves a 1x1 convolution of a concatenation in front of the upsampling Resizes that feed
// the concatenation (the decoders of SegFormer, FPN/PAN necks such as YOLOX's):
//
//   y = Conv1x1(Concat(Resize(x_1), ..., x_k), W, b)
//   becomes  y = Resize(Conv1x1(x_1, W_1)) + ... + Conv1x1(x_k, W_k) + b
//
// where W_i are W's input-channel slices. A 1x1 convolution mixes channels pixel by pixel
// and a Resize (nearest, linear or cubic, every mode but tf_crop_and_resize) blends pixels
// with the same weights in every channel, weights that sum to one, so the two commute and
// the bias passes through. The upsampled operands are then convolved at their own, lower
// resolution (SegFormer-B0's decoder fuse: 8.6 -> 2.8 GFLOP) and the concatenation, a copy
// of every upsampled tensor, disappears; the sum becomes the convolution's post-op adds.
// Float rounding changes (sums in another order), checked against the original graph in
// the tests. Only where every reader of the Concat is such a convolution, each Resize
// feeds only the Concat, and at least one of them upsamples.
#pragma once

#include <cstddef>

#include "ir/graph.hpp"

namespace orchid {

struct ResizeCommuteStats {
  std::size_t convolutions = 0;  // 1x1 convolutions of a concatenation split up
};

ResizeCommuteStats convolve_before_upsampling(Graph& graph);

}  // namespace orchid
