#include "distributed/tensor_slices.hpp"

#include <cstring>

#include "util/error.hpp"

namespace orchid::distributed {

namespace {

struct AxisSplit {
  std::int64_t outer = 1;        // product of the dims before the axis
  std::int64_t inner_bytes = 1;  // bytes of one index along the axis
};

AxisSplit split_at(const Tensor& t, int axis) {
  if (axis < 0 || axis >= static_cast<int>(t.rank())) {
    internal_error("axis {} out of range for a rank-{} tensor", axis, t.rank());
  }
  AxisSplit s;
  const std::int64_t element =
      t.numel() == 0 ? 0 : static_cast<std::int64_t>(t.nbytes()) / t.numel();
  std::int64_t inner = 1;
  for (int i = 0; i < static_cast<int>(t.rank()); ++i) {
    if (i < axis) s.outer *= t.shape()[i];
    if (i > axis) inner *= t.shape()[i];
  }
  s.inner_bytes = inner * element;
  return s;
}

}  // namespace

std::pair<std::int64_t, std::int64_t> block_range(std::int64_t extent, int part, int parts) {
  const std::int64_t base = extent / parts, extra = extent % parts;
  const std::int64_t begin = part * base + std::min<std::int64_t>(part, extra);
  return {begin, begin + base + (part < extra ? 1 : 0)};
}

Tensor slice_axis(const Tensor& t, int axis, std::int64_t begin, std::int64_t end) {
  const AxisSplit s = split_at(t, axis);
  Shape shape = t.shape();
  const std::int64_t extent = shape[axis];
  shape[axis] = end - begin;
  Tensor out(t.dtype(), shape);
  if (end == begin) return out;  // an empty block (more ranks than rows): nothing to copy
  for (std::int64_t o = 0; o < s.outer; ++o) {
    std::memcpy(out.raw() + o * (end - begin) * s.inner_bytes,
                t.raw() + (o * extent + begin) * s.inner_bytes, (end - begin) * s.inner_bytes);
  }
  return out;
}

Tensor concat_axis(const std::vector<Tensor>& parts, int axis) {
  if (parts.empty()) internal_error("concat of no tensors");
  Shape shape = parts[0].shape();
  std::int64_t total = 0;
  for (const Tensor& p : parts) total += p.shape()[axis];
  shape[axis] = total;
  Tensor out(parts[0].dtype(), shape);
  const AxisSplit s = split_at(out, axis);
  std::int64_t offset = 0;
  for (const Tensor& p : parts) {
    const std::int64_t n = p.shape()[axis];
    if (n == 0) continue;  // an empty block has no buffer to copy from
    for (std::int64_t o = 0; o < s.outer; ++o) {
      std::memcpy(out.raw() + (o * total + offset) * s.inner_bytes, p.raw() + o * n * s.inner_bytes,
                  n * s.inner_bytes);
    }
    offset += n;
  }
  return out;
}

Tensor sum_f32(const std::vector<Tensor>& parts) {
  Tensor out = parts.at(0);
  float* acc = out.data<float>();
  for (std::size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].shape() != out.shape()) internal_error("sum of partials of different shapes");
    const float* p = parts[i].data<float>();
    for (std::int64_t k = 0; k < out.numel(); ++k) acc[k] += p[k];
  }
  return out;
}

}  // namespace orchid::distributed
