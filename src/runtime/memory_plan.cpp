#include "runtime/memory_plan.hpp"

#include "fission/kernel_view.hpp"
#include "util/error.hpp"

namespace orchid {

MemoryPlan::MemoryPlan(const Graph& graph, const Plan& plan)
    : MemoryPlan(graph, plan.arena, plan.arena_bytes) {}

MemoryPlan::MemoryPlan(const Graph& graph, const std::vector<ArenaSlot>& arena,
                       std::int64_t arena_bytes)
    : graph_(graph), arena_bytes_(arena_bytes) {
  for (const auto& s : arena) arena_offset_[s.tensor] = s.offset;
  for (std::size_t i = 0; i < graph.inputs.size(); ++i) input_index_[graph.inputs[i]] = i;
  input_ptrs_.assign(graph.inputs.size(), nullptr);
}

std::optional<Location> MemoryPlan::locate_or_none(const std::string& t) const {
  Location l;
  if (graph_.is_constant(t)) {
    l.kind = Location::Kind::Constant;
    l.constant = graph_.tensor(t).data.get();
    return l;
  }
  if (auto it = input_index_.find(t); it != input_index_.end()) {
    l.kind = Location::Kind::Input;
    l.input = it->second;
    return l;
  }
  if (auto it = arena_offset_.find(t); it != arena_offset_.end()) {
    l.offset = it->second;
    return l;
  }
  return std::nullopt;
}

Location MemoryPlan::locate(const std::string& t) const {
  auto l = locate_or_none(t);
  if (!l) fail("plan executor: tensor '{}' is neither an input, a weight nor in the arena", t);
  return *l;
}

Location MemoryPlan::scratch_for(const std::string& t) {
  Location l;
  l.kind = Location::Kind::Scratch;
  l.offset = scratch_.take(tensor_bytes(graph_, t));
  return l;
}

void MemoryPlan::allocate_pools(SharedExecutorMemory* shared) {
  if (arena_base_) internal_error("memory plan: allocated twice");
  const std::int64_t bytes = AlignedBuffer::round_up(arena_bytes_) +
                             AlignedBuffer::round_up(scratch_.peak()) +
                             AlignedBuffer::round_up(layout_.peak()) + loop_.peak();
  shared_ = shared;
  if (shared) {
    place(shared->reserve(bytes));
    shared_generation_ = shared->generation();
  } else {
    own_ = AlignedBuffer(bytes);
    place(own_.data());
  }
}

bool MemoryPlan::follow_shared_memory() {
  if (!shared_memory_moved()) return false;
  place(shared_->data());
  shared_generation_ = shared_->generation();
  return true;
}

// Arena, then the scratch, layout and loop pools, each at a 64-byte boundary.
void MemoryPlan::place(std::byte* base) {
  arena_base_ = base;
  base += AlignedBuffer::round_up(arena_bytes_);
  scratch_.place(base);
  base += AlignedBuffer::round_up(scratch_.peak());
  layout_.place(base);
  loop_.place(base + AlignedBuffer::round_up(layout_.peak()));
  scratch_base_ = scratch_.at(0);
}

void MemoryPlan::bind_inputs(const TensorMap& inputs) {
  for (std::size_t i = 0; i < graph_.inputs.size(); ++i) {
    auto it = inputs.find(graph_.inputs[i]);
    if (it == inputs.end()) fail("plan executor: input '{}' is missing", graph_.inputs[i]);
    const TensorInfo& info = graph_.tensor(graph_.inputs[i]);
    if (it->second.shape() != info.shape || it->second.dtype() != info.dtype) {
      fail("plan executor: input '{}' has the wrong dtype or shape", graph_.inputs[i]);
    }
    input_ptrs_[i] = it->second.raw();
  }
}

const std::byte* MemoryPlan::address(const Location& l) const {
  switch (l.kind) {
    case Location::Kind::Constant:
      return l.constant->raw();
    case Location::Kind::Input:
      return input_ptrs_[l.input];
    case Location::Kind::Scratch:
      return scratch_base_ + l.offset;
    case Location::Kind::Arena:
      break;
  }
  return arena_base_ + l.offset;
}

std::byte* MemoryPlan::mutable_address(const Location& l) const {
  if (l.kind == Location::Kind::Scratch) return scratch_base_ + l.offset;
  if (l.kind != Location::Kind::Arena) {
    internal_error("plan executor: writing a tensor that is not an activation");
  }
  return arena_base_ + l.offset;
}

}  // namespace orchid
