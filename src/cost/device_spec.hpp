// A device as data (configs/devices/*.toml): memory, compute and launch figures the
// analytic cost model needs, plus the parameters of its efficiency curves. Every key of
// a device file is required, so a file always says everything the model uses; the
// meaning and unit of each key is documented next to it in the toml files and in
// docs/cost_model.md.
#pragma once

#include <string>
#include <vector>

#include "util/config_roots.hpp"

namespace orchid {

// One GEMM tile shape the linear-op model may choose (cuBLAS/CUTLASS-style kernels pick
// among a few): output tile rows x columns, and how well it runs relative to the best.
struct GemmTile {
  int m = 0;
  int n = 0;
  double efficiency = 1.0;  // (0, 1]
};

// Parameters of the analytic model's efficiency curves ([model] table).
struct CostCurveParams {
  // Transfer size at which effective bandwidth is half the achievable one; about
  // bandwidth x DRAM latency (Little's law), bytes.
  double mem_half_bytes = 0;
  // Shortest contiguous run that gets full bandwidth (a coalesced 128-byte segment on
  // GPUs, a 64-byte cache line on CPUs), bytes.
  double coalesce_bytes = 0;
  // Fraction of achievable bandwidth left for fully strided access (transpose that moves
  // the innermost axis, reductions along a non-contiguous axis, gathers of scalars).
  double strided_efficiency = 0;
  // Reduction short-axis curve: efficiency = min + (1 - min) * L / (L + half) for a
  // reduced length L.
  double reduce_axis_half = 0;
  double reduce_min_efficiency = 0;
  // Fraction of FP32 peak that elementwise / reduction math reaches.
  double vector_efficiency = 0;
  // FLOP-equivalents of one transcendental (exp, erf, tanh, sigmoid, sqrt, div, pow...).
  double transcendental_flops = 0;
  // Fraction of the matrix peak that the best tile reaches on a large problem.
  double gemm_efficiency = 0;
  // Fixed per-tile cost (prologue, epilogue, pipeline fill) in units of K.
  double gemm_k_overhead = 0;
  // Largest split-K factor the GEMM model may use for small-M*N, large-K problems.
  int gemm_max_split_k = 1;
  std::vector<GemmTile> gemm_tiles;
  // Fraction of FP32 peak for linear ops that do not map onto GEMM tiles (depthwise
  // convolutions, GEMV): direct CUDA-core / SIMD code.
  double direct_linear_efficiency = 0;
};

struct DeviceSpec {
  std::string name;                    // "a100"
  std::string kind;                    // "gpu" or "cpu"
  std::string description;             // "NVIDIA A100-SXM4-40GB"
  double dram_bandwidth_gbs = 0;       // achievable DRAM bandwidth, GB/s
  double dram_peak_bandwidth_gbs = 0;  // datasheet peak, GB/s (for reference)
  double peak_fp32_gflops = 0;         // CUDA-core / SIMD FP32 peak
  double peak_tf32_gflops = 0;         // tensor-core TF32 (0 if none)
  double peak_fp16_gflops = 0;         // tensor-core FP16 (0 if none)
  double peak_int8_gops = 0;           // int8 multiply-add rate, GOP/s (0: priced as fp32)
  double l2_bytes = 0;                 // last-level cache
  int compute_units = 0;               // SMs or cores
  double launch_overhead_us = 0;       // per kernel launch
  CostCurveParams curves;
  std::string source_file;  // the toml it was loaded from ("" if built in code)
};

// `name_or_path`: a device name resolved as devices/<name>.toml in the first config root
// that has it; or a path to a .toml file (anything containing '/' or ending in ".toml").
// Errors (orchid::Error) name the file and the key that is missing or wrong; an unknown
// name lists the available ones and the roots searched.
DeviceSpec load_device_spec(const std::string& name_or_path, const ConfigRoots& roots);
// The device TOML in `content`; `file` names it in errors.
DeviceSpec parse_device_spec(const std::string& content, const std::string& file);
// Names of the device files in every root's devices/, sorted.
std::vector<std::string> available_devices(const ConfigRoots& roots);

}  // namespace orchid
