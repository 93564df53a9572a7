#include "util/reuse_freed_memory.hpp"

#include <malloc.h>

namespace orchid {

void reuse_freed_memory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest: only bigger blocks are mmap'd
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
}

}  // namespace orchid
