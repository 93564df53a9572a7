#include "runtime/aligned_buffer.hpp"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "util/error.hpp"
#include "util/memory_budget.hpp"

namespace orchid {

std::int64_t AlignedBuffer::round_up(std::int64_t bytes) {
  constexpr auto a = static_cast<std::int64_t>(kAlignment);
  if (bytes < 0) internal_error("aligned buffer: negative size {}", bytes);
  if (bytes > std::numeric_limits<std::int64_t>::max() - (a - 1)) {
    internal_error("aligned buffer: size {} overflows", bytes);
  }
  return (bytes + a - 1) / a * a;
}

AlignedBuffer::AlignedBuffer(std::int64_t bytes) {
  if (bytes < 0) internal_error("aligned buffer: negative size {}", bytes);
  // Sizes come from plans and models: within the memory budget before anything else, so
  // an absurd size is the user's error, named, not an overflow further down.
  check_memory_budget(bytes, "an executor buffer (arena, scratch or layout pool)");
  // One spare line past the end: vector loops may read (never use) a little beyond a tensor;
  // one more to align what calloc returns.
  const std::int64_t rounded = round_up(bytes);
  if (rounded >
      std::numeric_limits<std::int64_t>::max() - 2 * static_cast<std::int64_t>(kAlignment)) {
    internal_error("aligned buffer: size {} overflows", bytes);
  }
  const auto total = static_cast<std::size_t>(rounded) + 2 * kAlignment;
  auto* p = static_cast<std::byte*>(std::calloc(total, 1));
  if (!p) throw std::bad_alloc();
  block_.reset(p);
  shift_ = kAlignment - reinterpret_cast<std::uintptr_t>(p) % kAlignment;
  size_ = bytes;
}

void AlignedBuffer::Free::operator()(std::byte* p) const {
  std::free(p);
}

std::int64_t checked_bytes(std::int64_t count, std::int64_t element_bytes) {
  if (count < 0 || element_bytes < 0) {
    internal_error("buffer size: negative count {} or element size {}", count, element_bytes);
  }
  if (element_bytes != 0 && count > std::numeric_limits<std::int64_t>::max() / element_bytes) {
    internal_error("buffer size: {} x {} bytes overflows", count, element_bytes);
  }
  return count * element_bytes;
}

}  // namespace orchid
