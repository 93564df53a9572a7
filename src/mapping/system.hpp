// The system description: a design library (configs/designs/*.toml) and a system file
// (configs/systems/*.toml) naming the devices, which designs may be loaded, the three
// bandwidth levels and the fixed accelerator mix the H2H baseline uses. Loading
// validates every key and fails naming the file and the key at fault.
#pragma once

#include <string>
#include <vector>

#include "mapping/cpu_cluster_cost.hpp"
#include "mapping/design.hpp"

namespace orchid::mapping {

struct System {
  std::string name;
  std::string path;
  std::vector<Design> designs;  // the designs reconfigurable devices may carry
  // Slots the search partitions into groups: reconfigurable FPGAs, or the MPI ranks of a
  // CPU cluster ([devices.cpu]), whose only design is the CPU executor.
  int fpga_devices = 0;
  int cpu_ranks = 0;  // > 0: a CPU cluster of this many ranks (then fpga_devices == cpu_ranks)
  // CPU cluster: the [network.p2p] fit and the cores of [devices.cpu].
  CpuNetwork cpu_network;
  // Fixed GPU devices; gpu_designs[i] is the design of GPU i (index into designs).
  std::vector<int> gpu_designs;
  double intra_group_gbs = 0;   // between members of one group
  double inter_group_gbs = 0;   // between groups
  double host_gbs = 0;          // host <-> each device: inputs, outputs, streamed weights
  bool route_via_host = false;  // inter-group traffic goes device -> host -> device
  bool overlap = false;         // overlap intra-group communication with computation
  // Per device, the design the H2H / greedy baselines use (cycled over the devices).
  std::vector<int> baseline_designs;

  int total_devices() const { return fpga_devices + static_cast<int>(gpu_designs.size()); }
  int design_index(const std::string& id) const;  // -1 when absent
};

// Reads a design library file ([[design]] tables).
std::vector<Design> load_design_library(const std::string& path);
// Reads configs/devices/<name>.toml style GPU specs (dram_bandwidth_gbs,
// peak_fp32_gflops, launch_overhead_us; memory_gb optional).
GpuSpec load_gpu_spec(const std::string& path);
// Reads a system file; the design library path inside it is relative to the file.
System load_system(const std::string& path);
// Same, from TOML text (tests); `path` is only used in messages and to resolve paths.
System parse_system(const std::string& text, const std::string& path);
std::vector<Design> parse_design_library(const std::string& text, const std::string& path);

}  // namespace orchid::mapping
