// Baselines costed by the same evaluator as the search: H2H (DAC 2022, its four steps),
// homogeneous data parallelism, and computation-prioritised greedy mapping.
#pragma once

#include <string>
#include <vector>

#include "mapping/evaluator.hpp"

namespace orchid::mapping {

struct BaselineResult {
  std::string name;
  bool available = false;
  std::string note;  // why not available, or what was chosen
  Mapping mapping;
  double latency = 0;  // under the common evaluator
};

// One group of every FPGA device with a single design, batch sharding wherever the
// batch allows; the best such design is kept.
BaselineResult data_parallel_baseline(const Evaluator& evaluator);

// Each device alone, carrying System::baseline_designs (cycled); each layer in list
// order goes to the device where it would finish first counting computation only.
BaselineResult greedy_baseline(const Evaluator& evaluator);

// Design of each device as the fixed-accelerator baselines see the system.
std::vector<int> baseline_device_designs(const System& system);

struct H2HResult {
  BaselineResult result;                   // mapping re-costed by the common evaluator
  double step_makespan[4] = {0, 0, 0, 0};  // H2H's own model after steps 1..4
  std::vector<int> device_of;              // per layer
  std::vector<bool> bound;                 // weights kept in device DRAM (step 2)
  std::vector<double> start, end;          // H2H's own schedule
};

// H2H's own cost model: every layer pays weights, IFM and OFM over the host link
// (System::host_gbs) unless weight locality (knapsack) or activation locality (the
// next layer of the same modality runs right after it on the same device) removes it.
// Steps: 1 computation-prioritised mapping of the ready frontier, 2 weight locality,
// 3 activation locality, 4 communication-aware neighbour remapping.
H2HResult h2h_baseline(const Evaluator& evaluator);

}  // namespace orchid::mapping
