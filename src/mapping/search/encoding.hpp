// The outer chromosome of the two-level GA and how it decodes into a mapping. FPGA
// groups are slots whose size may be 0; GPU groups follow with fixed sizes; every run
// of consecutive layers ("unit") is placed on a slot.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "mapping/evaluator.hpp"

namespace orchid::mapping {

struct SearchOptions;

namespace search {

struct Outer {
  std::vector<int> size;       // per FPGA slot: devices (0 = unused)
  std::vector<int> design;     // per FPGA slot: index into Problem::fpga_designs
  std::vector<int> unit_slot;  // per layer run: slot
  bool operator==(const Outer&) const = default;
};

// What every part of the search shares: the evaluator and the chromosome's shape.
struct Problem {
  const Evaluator& ev;
  std::vector<int> fpga_designs;                // System::designs indices
  std::vector<std::pair<int, int>> gpu_groups;  // (design, size)
  int fpga_slots = 0;
  int fpga_devices = 0;
  std::vector<std::vector<int>> units;  // layer runs
  std::vector<int> unit_of;             // per layer
  int slots() const { return fpga_slots + static_cast<int>(gpu_groups.size()); }
  int unit_count() const { return static_cast<int>(units.size()); }
  int design_count() const { return static_cast<int>(fpga_designs.size()); }
};

Problem make_problem(const Evaluator& ev, const SearchOptions& options);

// An individual with every slot empty and every unit on slot 0.
Outer blank_outer(const Problem& pb);

// Outer individual -> mapping without strategies; `key` identifies it for the memo
// (groups nobody uses still hold their devices, so they stay in the key).
Mapping decode(const Problem& pb, const Outer& o, std::vector<int>& key);
std::uint64_t hash_key(const std::vector<int>& key);

// Single-device time of a layer on a design; "never" (1e30) when it cannot run it.
double work_of(const Evaluator& ev, int layer, int design);

}  // namespace search
}  // namespace orchid::mapping
