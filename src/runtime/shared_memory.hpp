// Memory that executors running one after another share for their arenas and pools (plan
// selection's candidates, timed in turns): they never run at once, so together they need
// the largest one's memory, not the sum. Candy's four candidates held 123 MB of arenas and
// pools apart; shared, 31.
//
// A later executor may need more: the block is then replaced by a larger one, and the
// generation changes. An executor compares generations before it runs and points its
// stages at the new block; what the old block held (the last run's outputs) is gone.
#pragma once

#include <cstdint>

#include "runtime/aligned_buffer.hpp"

namespace orchid {

class SharedExecutorMemory {
 public:
  // The block, at least `bytes` long: the current one, or a larger one replacing it (the
  // old one freed first: its contents need not survive).
  std::byte* reserve(std::int64_t bytes);
  std::byte* data() { return block_.data(); }
  std::int64_t size() const { return block_.size(); }
  std::uint64_t generation() const { return generation_; }

 private:
  AlignedBuffer block_;
  std::uint64_t generation_ = 0;
};

}  // namespace orchid
