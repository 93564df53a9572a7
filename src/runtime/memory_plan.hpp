// Where every tensor of an executed plan lives: activations that cross kernels in one
// arena laid out by the plan's offsets, graph inputs and weights read in place, a kernel's
// internal intermediates in one scratch pool shared by all kernels, and the reordered
// (blocked / channels-last) copies of convolutions in one more shared pool. Offsets are
// fixed while the plan is compiled; the arena and pools are allocated once after that, in
// one block (or in a block other executors share: shared_memory.hpp), and nothing is
// allocated per run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "eval/reference_interpreter.hpp"
#include "ir/graph.hpp"
#include "orchestrate/plan.hpp"
#include "runtime/aligned_buffer.hpp"
#include "runtime/memory_pool.hpp"
#include "runtime/shared_memory.hpp"

namespace orchid {

// Where a tensor a stage reads or writes lives.
struct Location {
  enum class Kind { Arena, Input, Constant, Scratch } kind = Kind::Arena;
  std::int64_t offset = 0;  // Arena, Scratch
  std::size_t input = 0;    // Input: position in graph.inputs
  const Tensor* constant = nullptr;
};

class MemoryPlan {
 public:
  // The arena (`plan.arena_bytes`) and the pools come later (allocate_pools).
  MemoryPlan(const Graph& graph, const Plan& plan);
  // The same with the arena laid out as `arena` says (offsets), of `arena_bytes`.
  MemoryPlan(const Graph& graph, const std::vector<ArenaSlot>& arena, std::int64_t arena_bytes);

  // A weight, graph input or arena tensor; nullopt for anything else.
  std::optional<Location> locate_or_none(const std::string& tensor) const;
  // Like locate_or_none, an error when the tensor has no place.
  Location locate(const std::string& tensor) const;
  // A new block of `tensor`'s size in the scratch pool for the current kernel (the pool
  // restarts at offset 0 for each kernel: begin_kernel).
  Location scratch_for(const std::string& tensor);
  void begin_kernel() { scratch_.begin_user(); }

  // Reordered copies of one convolution's tensors (the pool restarts for each one).
  ReusedPool& layout_pool() { return layout_; }
  // Fused loops' row buffers (each loop a user: they run one after another).
  ReusedPool& loop_pool() { return loop_; }

  // Allocates the arena and the scratch and layout pools, in `shared` where given (the
  // caller keeps it alive); addresses are valid from then on.
  void allocate_pools(SharedExecutorMemory* shared = nullptr);
  // In shared memory that another executor's allocate_pools replaced since: moves the
  // addresses to the new block and returns true (views bound to the old ones must be
  // bound again). False where nothing moved.
  bool follow_shared_memory();
  bool shared_memory_moved() const {
    return shared_ && shared_->generation() != shared_generation_;
  }
  std::int64_t scratch_bytes() const { return scratch_.peak(); }
  std::int64_t layout_bytes() const { return layout_.peak(); }
  std::int64_t loop_buffer_bytes() const { return loop_.peak(); }

  // Binds the graph inputs of one run (read in place); errors on a missing or mistyped one.
  void bind_inputs(const TensorMap& inputs);
  const std::byte* input_address(std::size_t input) const { return input_ptrs_[input]; }
  const std::byte* address(const Location& l) const;
  std::byte* mutable_address(const Location& l) const;

 private:
  void place(std::byte* base);

  const Graph& graph_;
  std::int64_t arena_bytes_ = 0;
  AlignedBuffer own_;  // arena, scratch and layout pools, unless shared
  SharedExecutorMemory* shared_ = nullptr;
  std::uint64_t shared_generation_ = 0;
  std::byte* arena_base_ = nullptr;  // set by allocate_pools
  ReusedPool scratch_, layout_, loop_;
  std::byte* scratch_base_ = nullptr;  // set by allocate_pools
  std::unordered_map<std::string, std::int64_t> arena_offset_;
  std::unordered_map<std::string, std::size_t> input_index_;
  std::vector<const std::byte*> input_ptrs_;  // bound per run
};

}  // namespace orchid
