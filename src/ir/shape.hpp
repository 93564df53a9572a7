// Static shapes and the index arithmetic every stage shares.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace orchid {

using Shape = std::vector<std::int64_t>;

// Element count. Every size derived from input goes through checked_numel: a negative
// dimension or a count whose product (zero dimensions counted as 1, so strides fit too)
// exceeds kMaxElements is an orchid::Error prefixed with `context`.
inline constexpr std::int64_t kMaxElements = INT64_MAX / 16;  // bytes fit for every dtype
std::int64_t checked_numel(const Shape& shape, const std::string& context);
// checked_numel(shape) * element_size, which then cannot overflow.
std::int64_t checked_nbytes(const Shape& shape, std::size_t element_size,
                            const std::string& context);
// checked_numel with a generic context (the shape itself).
std::int64_t shape_numel(const Shape& shape);
std::string shape_to_string(const Shape& shape);  // "1x3x224x224", "scalar" for rank 0

// Row-major strides in elements.
std::vector<std::int64_t> shape_strides(const Shape& shape);

// Numpy-style broadcast of two shapes; throws orchid::Error with `context` on mismatch.
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& context);

// Normalises a possibly negative axis against `rank`; throws with `context` if out of range.
std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank, const std::string& context);

}  // namespace orchid
