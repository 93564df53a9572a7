// Helpers shared by the elementwise, reduction and normalization reference kernels:
// dtype dispatch onto a C++ element type and numpy-style broadcast index walking.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ir/dtype.hpp"
#include "ir/node.hpp"
#include "ir/shape.hpp"
#include "util/error.hpp"

namespace orchid::elementwise_util {

// Calls f(T{}) for the element type T of `dtype`, which must be one of Ts. Shape functions
// refuse other dtypes at import, so reaching the error here means a shape function and
// its kernel disagree.
template <typename... Ts, typename F>
void dispatch(DType dtype, const Node& node, F&& f) {
  const bool handled = ((dtype == dtype_of<Ts>::value ? (f(Ts{}), true) : false) || ...);
  if (!handled) {
    unsupported("{}: unsupported: dtype {} has no reference kernel", node.describe(),
                dtype_name(dtype));
  }
}

// Strides of a tensor of shape `in` seen through the (higher or equal) rank of `out`:
// 0 on the leading dims `in` lacks and on the dims where it is broadcast from 1.
inline std::vector<std::int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<std::int64_t> strides(out.size(), 0);
  const std::vector<std::int64_t> own = shape_strides(in);
  const std::size_t lead = out.size() - in.size();
  for (std::size_t d = 0; d < in.size(); ++d) {
    strides[lead + d] = in[d] == 1 ? 0 : own[d];
  }
  return strides;
}

// Visits every element of `out` in row-major order, calling f(out_index, offsets) where
// offsets[k] is the flat index of the matching element of input k under numpy
// broadcasting. The inner dimension runs as a plain loop; only row changes touch the
// multi-index, so the cost per element is a few adds.
template <std::size_t N, typename F>
void for_each_broadcast(const Shape& out, const std::array<const Shape*, N>& ins, F&& f) {
  const std::int64_t total = shape_numel(out);
  if (total == 0) return;
  const std::size_t rank = out.size();
  std::array<std::vector<std::int64_t>, N> strides;
  std::array<std::int64_t, N> inner_stride{};
  for (std::size_t k = 0; k < N; ++k) {
    strides[k] = broadcast_strides(*ins[k], out);
    inner_stride[k] = rank ? strides[k][rank - 1] : 0;
  }
  const std::int64_t inner = rank ? out[rank - 1] : 1;
  std::vector<std::int64_t> index(rank, 0);
  std::array<std::int64_t, N> base{};  // input offsets of the current row's first element
  std::array<std::int64_t, N> offsets{};
  for (std::int64_t row_start = 0; row_start < total; row_start += inner) {
    for (std::int64_t j = 0; j < inner; ++j) {
      for (std::size_t k = 0; k < N; ++k) offsets[k] = base[k] + j * inner_stride[k];
      f(row_start + j, offsets);
    }
    // Advance the multi-index over the outer dims (odometer style).
    for (std::size_t d = rank >= 2 ? rank - 1 : 0; d-- > 0;) {
      ++index[d];
      for (std::size_t k = 0; k < N; ++k) base[k] += strides[k][d];
      if (index[d] < out[d]) break;
      for (std::size_t k = 0; k < N; ++k) base[k] -= strides[k][d] * out[d];
      index[d] = 0;
    }
  }
}

}  // namespace orchid::elementwise_util
