#include "runtime/shared_memory.hpp"

namespace orchid {

std::byte* SharedExecutorMemory::reserve(std::int64_t bytes) {
  if (!block_.data() || bytes > block_.size()) {
    block_ = AlignedBuffer();
    block_ = AlignedBuffer(bytes);
    ++generation_;
  }
  return block_.data();
}

}  // namespace orchid
