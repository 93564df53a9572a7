// The system description: a design library (configs/designs/*.toml) and a system file
// (configs/systems/*.toml) naming the devices, which designs may be loaded, the three
// bandwidth levels and the fixed accelerator mix the H2H baseline uses. Loading
// validates every key and fails naming the file and the key at fault.
#pragma once

#include <string>
#include <vector>

#include "mapping/cpu_cluster_cost.hpp"
#include "mapping/design.hpp"
#include "util/config_roots.hpp"

namespace orchid::mapping {

// [[topology.link]]: a direct link between two devices (indices in system order: FPGA
// slots first, then GPUs as listed), used both ways.
struct Link {
  int a = 0;
  int b = 0;
  double gbs = 0;
  double latency_us = 0;
};

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
  // [topology]: per-device host links and per-pair links; what is not listed uses the
  // global figures above.
  std::vector<double> device_host_gbs;  // empty, or one per device
  std::vector<Link> links;

  int total_devices() const { return fpga_devices + static_cast<int>(gpu_designs.size()); }
  int design_index(const std::string& id) const;  // -1 when absent
  double host_gbs_of(int device) const;
  // The listed link between two devices (either order), or nullptr.
  const Link* link_between(int a, int b) const;
};

// Reads a design library file ([[design]] tables).
std::vector<Design> load_design_library(const std::string& path);
// A device file (configs/devices/*.toml, checked like `--device`) as the figures the
// mapping roofline uses.
GpuSpec load_gpu_spec(const std::string& path);
// Reads a system file. Files it names (design_library, a device given as a path) are
// relative to the file and must stay inside its config tree (the folder above its own);
// a device given by name is devices/<name>.toml of that tree, else of `roots`.
System load_system(const std::string& path, const ConfigRoots& roots = {});
// Same, from TOML text (tests); `path` is only used in messages and to resolve paths.
System parse_system(const std::string& text, const std::string& path,
                    const ConfigRoots& roots = {});
// `--system`: a path (contains '/' or ends in .toml) as given, else systems/<name>.toml in
// the first of `roots` that has it; an unknown name lists the available ones.
std::string find_system(const std::string& name_or_path, const ConfigRoots& roots);
std::vector<Design> parse_design_library(const std::string& text, const std::string& path);

}  // namespace orchid::mapping
