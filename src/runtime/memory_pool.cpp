#include "runtime/memory_pool.hpp"

#include <algorithm>
#include <limits>

#include "util/error.hpp"

namespace orchid {

std::int64_t ReusedPool::take(std::int64_t bytes) {
  if (allocated_) internal_error("memory pool: a block was requested after allocation");
  const std::int64_t offset = used_;
  const std::int64_t size = AlignedBuffer::round_up(bytes);
  if (size > std::numeric_limits<std::int64_t>::max() - used_) {
    internal_error("memory pool: {} + {} bytes overflows", used_, size);
  }
  used_ += size;
  peak_ = std::max(peak_, used_);
  return offset;
}

void ReusedPool::allocate() {
  if (allocated_) internal_error("memory pool: allocated twice");
  buffer_ = AlignedBuffer(peak_);
  base_ = buffer_.data();
  allocated_ = true;
}

void ReusedPool::place(std::byte* base) {
  if (allocated_ && buffer_.data()) internal_error("memory pool: allocated, then placed");
  base_ = base;
  allocated_ = true;
}

std::byte* ReusedPool::at(std::int64_t offset) {
  if (!allocated_) internal_error("memory pool: address taken before allocation");
  if (offset < 0 || offset > peak_)
    internal_error("memory pool: offset {} outside {} bytes", offset, peak_);
  return base_ + offset;
}

}  // namespace orchid
