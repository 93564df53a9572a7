#include "runtime/copy_kernels.hpp"

#include <cstring>

namespace orchid {

namespace {

// Bytes of one slab below `axis` of a tensor of `shape` (elements of `element` bytes),
// and the number of such slabs above it.
struct Slabs {
  std::int64_t outer = 1, inner_bytes = 0;
};

Slabs slabs(const Shape& shape, std::int64_t axis, std::size_t element) {
  Slabs s;
  std::int64_t inner = 1;
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(shape.size()); ++d) {
    if (d < axis) s.outer *= shape[static_cast<std::size_t>(d)];
    if (d > axis) inner *= shape[static_cast<std::size_t>(d)];
  }
  s.inner_bytes = inner * static_cast<std::int64_t>(element);
  return s;
}

std::int64_t normalized_axis(const Node& n, std::size_t rank) {
  std::int64_t axis = n.attr_int("axis", 0);
  return axis < 0 ? axis + static_cast<std::int64_t>(rank) : axis;
}

std::size_t element_bytes(const Tensor& t) {
  return t.numel() > 0 ? t.nbytes() / static_cast<std::size_t>(t.numel()) : 1;
}

void concat_by_copies(const Node& n, std::span<const Tensor* const> ins, std::span<Tensor> outs) {
  Tensor& y = outs[0];
  const std::int64_t axis = normalized_axis(n, y.shape().size());
  const Slabs s = slabs(y.shape(), axis, element_bytes(y));
  const std::int64_t row = y.shape()[static_cast<std::size_t>(axis)] * s.inner_bytes;
  std::byte* dst = y.raw();
  std::int64_t offset = 0;
  for (const Tensor* t : ins) {
    if (!t) continue;
    const std::int64_t chunk = t->shape()[static_cast<std::size_t>(axis)] * s.inner_bytes;
    const std::byte* src = t->raw();
    for (std::int64_t o = 0; o < s.outer; ++o) {
      std::memcpy(dst + o * row + offset, src + o * chunk, static_cast<std::size_t>(chunk));
    }
    offset += chunk;
  }
}

void split_by_copies(const Node& n, std::span<const Tensor* const> ins, std::span<Tensor> outs) {
  const Tensor& x = *ins[0];
  const std::int64_t axis = normalized_axis(n, x.shape().size());
  const Slabs s = slabs(x.shape(), axis, element_bytes(x));
  const std::int64_t row = x.shape()[static_cast<std::size_t>(axis)] * s.inner_bytes;
  const std::byte* src = x.raw();
  std::int64_t offset = 0;
  for (Tensor& y : outs) {
    const std::int64_t chunk = y.shape()[static_cast<std::size_t>(axis)] * s.inner_bytes;
    std::byte* dst = y.raw();
    for (std::int64_t o = 0; o < s.outer; ++o) {
      std::memcpy(dst + o * chunk, src + o * row + offset, static_cast<std::size_t>(chunk));
    }
    offset += chunk;
  }
}

}  // namespace

ReferenceKernel find_copy_kernel(const std::string& op_type) {
  if (op_type == "Concat") return concat_by_copies;
  if (op_type == "Split") return split_by_copies;
  return nullptr;
}

}  // namespace orchid
