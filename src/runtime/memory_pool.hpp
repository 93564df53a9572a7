// One aligned block shared by users that never hold memory at the same time (the
// executor's kernels run one after another): each user lays out its blocks from offset 0,
// and the pool is as large as the largest user. Offsets are handed out while planning;
// the memory exists once allocate() is called.
#pragma once

#include <cstdint>

#include "runtime/aligned_buffer.hpp"

namespace orchid {

class ReusedPool {
 public:
  // The next blocks belong to a new user and are laid out from offset 0 again.
  void begin_user() { used_ = 0; }
  // A block of `bytes` (64-byte aligned) for the current user; returns its offset.
  std::int64_t take(std::int64_t bytes);
  // The largest user's total so far.
  std::int64_t peak() const { return peak_; }

  // Allocates peak() bytes; afterwards take() is an internal error.
  void allocate();
  // Like allocate(), in peak() bytes at `base` that the caller owns; again to move there.
  void place(std::byte* base);
  bool allocated() const { return allocated_; }
  // Address of `offset` (allocate() or place() first).
  std::byte* at(std::int64_t offset);

 private:
  AlignedBuffer buffer_;
  std::byte* base_ = nullptr;
  std::int64_t used_ = 0, peak_ = 0;
  bool allocated_ = false;
};

}  // namespace orchid
