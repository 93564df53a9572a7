// Moves the transposes between token and image form in vision transformers (SegFormer's
// Mix-FFN, PVT, ViT's patch embedding) to the other side of the reshape, so that they
// become NHWC <-> NCHW changes that a channels-last convolution absorbs:
//
//   tokens [B, N, C] -Transpose(0,2,1)-> [B, C, N] -Reshape-> [B, C, H, W]   (N = H W)
//   becomes  tokens -Reshape-> [B, H, W, C] -Transpose(0,3,1,2)-> [B, C, H, W]
//
//   image [B, C, H, W] -Reshape-> [B, C, N] -Transpose(0,2,1)-> tokens [B, N, C]
//   becomes  image -Transpose(0,2,3,1)-> [B, H, W, C] -Reshape-> tokens
//
// Both forms compute the same values (no rounding changes). In the original form the
// transposed [B, C, N] tensor sits between plain token tensors and a convolution that
// keeps NHWC, so the data is transposed twice on each side; in the new form the
// [B, H, W, C] bytes are the tokens' bytes and the executor's stored-layout loops copy
// them straight through. Only where the intermediate has no other reader and is not a
// graph output.
#pragma once

#include <cstddef>

#include "ir/graph.hpp"

namespace orchid {

struct TokenTransposeStats {
  std::size_t rewritten = 0;  // Transpose + Reshape pairs turned around
};

TokenTransposeStats regroup_token_transposes(Graph& graph);

}  // namespace orchid
