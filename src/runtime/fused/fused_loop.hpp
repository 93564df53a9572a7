// A fused loop: a run of memory-bound primitives of one kernel — elementwise maps,
// reductions over trailing axes, and layout ops that only move data — executed as one
// pass over the data, row by row, on all cores.
//
// The run's values live in a rows x cols space: a reduction over trailing axes turns a
// full value (rows x cols) into a row value (one number per row), which later ops
// broadcast back. Each row is computed in small per-thread buffers (cols floats per
// value), so intermediates never round-trip through a full-size tensor in memory.
// Layout ops cost nothing at run time: a chain of Transpose / Reshape / Slice / Expand /
// Gather on a tensor the run reads becomes an index map, computed once when the loop is
// compiled by running those ops' reference kernels on a tensor of element offsets, and
// kept as row + column offset tables (or one full table when the map is not separable).
// A Transpose / Reshape on a computed value that leaves the run becomes a scattered store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.hpp"
#include "util/refusable.hpp"

namespace orchid {

// How a tensor the loop reads or writes is stored when not plain row-major (channels-last
// or blocked, as a convolution next to the loop prefers): the memory offset of each element
// in logical row-major order, and the dims of the storage order, outermost first. Offsets
// are 32-bit (a fused loop refuses tensors of 2^31 elements and more): these tables have a
// tensor's size, and 64-bit ones made Candy's executor build peak at 290 MB.
struct StoredLayout {
  Shape storage_dims;
  std::vector<std::int32_t> offsets;
};
using StoredLayouts = std::map<std::string, std::shared_ptr<const StoredLayout>>;

class FusedLoop {
 public:
  // Compiles `nodes` (topological order) of `graph`; `needed` are the tensors produced by
  // the run that something outside it reads; `layouts` how the tensors it reads and writes
  // are stored where not plain. A loop without reductions that writes (or reads) such a
  // tensor walks the elements in that tensor's storage order, so it streams through it
  // and gathers only what is stored otherwise. Refused, with the reason, when the run is
  // outside what a fused loop expresses.
  static Refusable<std::unique_ptr<FusedLoop>> compile(const Graph& graph,
                                                       const std::vector<std::size_t>& nodes,
                                                       const std::set<std::string>& needed,
                                                       const StoredLayouts& layouts = {});
  ~FusedLoop();

  // The tensors the loop reads and writes; run() takes their addresses in this order.
  const std::vector<std::string>& reads() const;
  const std::vector<std::string>& writes() const;
  void run(std::span<const std::byte* const> reads, std::span<std::byte* const> writes);

  // Whether it walks the storage order of a stored layout; otherwise it walks the logical
  // order and gathers what is stored otherwise element by element.
  bool walks_storage_order() const;
  std::int64_t rows() const;
  std::int64_t cols() const;
  // Bytes of per-thread row buffers and index tables held by the loop.
  std::int64_t scratch_bytes() const;
  // Bytes of the per-thread row buffers alone (64-byte aligned blocks).
  std::int64_t buffer_bytes() const;
  // The row buffers at `base` from now on (buffer_bytes() there, 64-byte aligned, owned by
  // the caller, used by no one else while run() runs) instead of the loop's own: an
  // executor's loops run one after another and share one block (Candy's 63 loops held
  // 5 MB of them apart).
  void use_buffers(std::byte* base);

  struct Impl;  // public so the compiler in the .cpp can build one

 private:
  explicit FusedLoop(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace orchid
