// Keeps freed memory in the process for reuse instead of handing it back to the kernel.
// glibc's defaults return blocks of some hundred kilobytes (mmap'd chunks, a trimmed
// heap top), so code that allocates fresh results of that size on every run faults
// their pages in again each time: MobileNetV2's mixed plan on 2 MPI ranks ran 33 ms with
// the defaults, 22 ms with this. For processes that run the same work repeatedly (the
// distributed plan runner, the layer measurements of `orchid map`); their peak memory
// stays what it was, only no longer shrinks after it.
#pragma once

namespace orchid {

void reuse_freed_memory();

}  // namespace orchid
