// An owned block of 64-byte-aligned memory (cache lines, AVX-512 loads), freed on
// destruction. Sizes are checked: a negative or overflowing request is an internal
// error, not a short allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace orchid {

class AlignedBuffer {
 public:
  static constexpr std::size_t kAlignment = 64;

  AlignedBuffer() = default;
  // At least `bytes` bytes (one cache line when 0), zero-filled; throws InternalError on a
  // negative or overflowing size, std::bad_alloc when the system has no memory. Zeroed by
  // calloc: fresh pages stay untouched, so an arena costs resident memory only from its
  // first run, not while the executor is built (Candy's 26 MB arena, with the build's
  // offset tables, put its peak above ONNX Runtime's).
  explicit AlignedBuffer(std::int64_t bytes);

  std::byte* data() { return block_ ? block_.get() + shift_ : nullptr; }
  const std::byte* data() const { return block_ ? block_.get() + shift_ : nullptr; }
  std::int64_t size() const { return size_; }

  // `bytes` rounded up to the alignment, overflow-checked: the stride of consecutive
  // blocks in one pool.
  static std::int64_t round_up(std::int64_t bytes);

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> block_;  // as calloc returned it
  std::size_t shift_ = 0;                   // to the first aligned byte
  std::int64_t size_ = 0;
};

// Bytes of `count` elements of `element_bytes` each, or InternalError on overflow.
std::int64_t checked_bytes(std::int64_t count, std::int64_t element_bytes);

}  // namespace orchid
