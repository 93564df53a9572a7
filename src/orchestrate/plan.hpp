// An executable orchestration plan: kernels in a valid order, each with the primitives it
// computes, the tensors it reads (bound to the kernel that provides them) and writes,
// plus tensor lifetimes and a memory arena.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "orchestrate/candidates.hpp"

namespace orchid {

struct PlannedKernel {
  std::vector<std::size_t> nodes;    // primitive node indices, topological order
  std::vector<std::string> inputs;   // as the kernel's primitives name them
  std::vector<std::string> sources;  // per input: the tensor actually read (an alternative
                                     // computation's tensor may stand in for it)
  std::vector<std::string> outputs;
  double cost_us = 0;
};

struct ArenaSlot {
  std::string tensor;
  std::int64_t offset = 0;
  std::int64_t bytes = 0;
  std::size_t first_kernel = 0;  // writer
  std::size_t last_kernel = 0;   // last reader (kernel count for graph outputs)
};

struct Plan {
  std::string kind;  // "optimal", "operator-level", "per-primitive", "greedy-fusion"
  std::vector<PlannedKernel> kernels;
  double total_us = 0;
  std::vector<ArenaSlot> arena;
  std::int64_t arena_bytes = 0;   // peak of the arena (activations only)
  std::int64_t weight_bytes = 0;  // constants, outside the arena
};

struct KernelChoice {
  std::vector<std::size_t> nodes;
  double cost_us = 0;
};

// First-fit placement of `slots` by decreasing size: a slot shares bytes with another only
// when their lifetimes do not overlap. Each group in `same_block` (indices into `slots`)
// gets one offset, placed as one slot living from its first writer to its last reader (a
// result written over an operand its kernel reads last: runtime/in_place_residuals.hpp).
// Returns the arena's peak.
std::int64_t assign_arena_offsets(std::vector<ArenaSlot>& slots,
                                  const std::vector<std::vector<std::size_t>>& same_block = {});

// Orders the kernels (each input bound to a chosen provider), assigns arena offsets.
// If the kernels cannot be ordered (two multi-output kernels waiting on each other),
// returns nullopt and stores the indices (into `choices`) of a dependency cycle.
std::optional<Plan> build_plan(const PrimitiveGraphIndex& index,
                               const std::map<std::string, std::string>& alternatives,
                               const std::vector<KernelChoice>& choices, const std::string& kind,
                               std::vector<std::size_t>* cycle = nullptr);

}  // namespace orchid
