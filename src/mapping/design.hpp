// A design is what one reconfigurable device can be loaded with (an FPGA accelerator
// from the library), or the fixed "design" of a GPU device. Costs live in layer_cost.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace orchid::mapping {

// Layer kinds the mapper distinguishes; cheap = pooling, elementwise, normalisation.
enum class LayerKind : std::uint8_t { Conv, Fc, MatMul, Lstm, Cheap };
inline constexpr int kLayerKinds = 5;

std::string_view kind_name(LayerKind kind);
// Parses "conv", "fc", "matmul", "lstm", "cheap"; false when unknown.
bool parse_kind(std::string_view text, LayerKind& kind);

// What the analytic GPU model needs (configs/devices/<name>.toml).
struct GpuSpec {
  std::string name;
  double dram_bandwidth_gbs = 0;
  double peak_fp32_gflops = 0;
  double launch_overhead_us = 0;
  double memory_gb = 16;
  // The configs/devices/*.toml it came from ("" for a spec written inline in a system
  // file); the orchestrator-backed layer costs load the full device model from it.
  std::string spec_path;
};

struct Design {
  std::string id;
  std::string type;  // CNN, FC, LSTM, GPU or CPU: the class H2H groups accelerators by
  double throughput_gops = 0;
  double freq_mhz = 0;
  double dram_gb = 0;
  double weight_fraction = 0;  // share of DRAM that may hold resident weights
  int port_bits = 512;         // DRAM <-> on-chip port width
  int dtype_bits = 32;
  int tm = 1, tn = 1, tr = 1, tc = 1;  // loop tiling of the conv engine
  int tr_in = 1, tc_in = 1;            // input tile rows/cols as the model charges them
  double power_w = 0;
  std::uint32_t supports = 0;  // bit per LayerKind
  bool is_gpu = false;
  // A CPU-cluster "design": an MPI rank running the CPU plan executor with `threads`
  // OpenMP threads. Its layer costs are measured (measured_cpu_cost.hpp); `gpu` then holds
  // the CPU's roofline figures (configs/devices/cpu.toml) for the analytic fallback.
  bool is_cpu = false;
  int threads = 1;
  GpuSpec gpu;

  bool supports_kind(LayerKind k) const { return (supports >> static_cast<int>(k)) & 1u; }
  double weight_capacity_bytes() const { return dram_gb * 1e9 * weight_fraction; }
  double dram_bytes() const { return dram_gb * 1e9; }
  double bytes_per_element() const { return dtype_bits / 8.0; }
};

}  // namespace orchid::mapping
