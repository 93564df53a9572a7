// Slicing, concatenation and summation of tensors along one axis: what sharding a layer
// across ranks does to its operands (out-channel slices of a weight, in-channel slices
// of both operands) and to its results (concatenate gathered slices, sum partials).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/tensor.hpp"

namespace orchid::distributed {

// Part `part` of `parts` near-equal contiguous blocks of [0, extent): [begin, end).
std::pair<std::int64_t, std::int64_t> block_range(std::int64_t extent, int part, int parts);

Tensor slice_axis(const Tensor& t, int axis, std::int64_t begin, std::int64_t end);
Tensor concat_axis(const std::vector<Tensor>& parts, int axis);
// Elementwise sum of float tensors of one shape, added in the given order (deterministic).
Tensor sum_f32(const std::vector<Tensor>& parts);

}  // namespace orchid::distributed
