// The analytic kernel cost: a pure function of (kernel, device). Exposed piecewise so
// tests, reports and a later measured model (which falls back to this one for kernels
// it has no measurement of) can see why a kernel costs what it costs.
// The model is documented in docs/cost_model.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cost/device_spec.hpp"
#include "fission/kernel_view.hpp"

namespace orchid {

struct KernelCost {
  double launch_us = 0;
  double memory_us = 0;   // DRAM traffic at the effective bandwidth
  double compute_us = 0;  // linear ops on the matrix units + vector math
  double total_us = 0;    // launch + max(memory, compute)
  double dram_bytes = 0;  // inputs read once + outputs written once
  double flops = 0;       // useful FLOPs (a multiply-add is 2)
  double linear_flops = 0;
  double access_efficiency = 1;  // bandwidth fraction the access pattern allows
  bool compute_bound() const { return compute_us > memory_us; }
};

KernelCost analytic_kernel_cost(const KernelView& kernel, const DeviceSpec& device);

// Which peak a linear op runs at: FP16 tensor cores, TF32 tensor cores, FP32 units
// (resolved against the device when costed, falling back as matrix_peak does).
enum class MatrixPeak { Fp16, Tf32, Fp32, Int8 };

// What analytic_kernel_cost() derives from the graph, before any throughput figure
// (launch overhead, bandwidth, peaks, efficiencies, transcendental cost) is applied.
// analytic_kernel_cost(k, d) == cost_from_terms(kernel_cost_terms(k, d), d); the
// calibration evaluates the terms once per kernel and re-costs them for many candidate
// parameter sets. Depends on the device's access-pattern curves only (coalesce_bytes,
// strided_efficiency, reduce_*), which calibration does not change.
struct KernelCostTerms {
  double dram_bytes = 0;
  double access_efficiency = 1;
  double flops = 0;
  double linear_flops = 0;
  double plain_vector_flops = 0;           // at 1 FLOP each
  double transcendental_vector_flops = 0;  // each costs transcendental_flops
  struct Linear {
    std::int64_t batch = 1, m = 0, n = 0, k = 0;
    MatrixPeak peak = MatrixPeak::Fp32;
  };
  std::vector<Linear> linear;
};
KernelCostTerms kernel_cost_terms(const KernelView& kernel, const DeviceSpec& device);
KernelCost cost_from_terms(const KernelCostTerms& terms, const DeviceSpec& device);

// The GEMM shape a linear node maps to (implicit GEMM for convolutions).
struct GemmShape {
  std::int64_t batch = 1;  // independent GEMMs (batch dims, conv groups)
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t flops() const { return 2 * batch * m * n * k; }
};
// Returns false for ops that are not linear or lack typed shapes.
bool linear_gemm_shape(const Graph& graph, const Node& node, GemmShape& shape);

// Time of one linear op on the device, in microseconds: the better of tiled GEMM on
// the matrix units (tile quantisation, waves over compute units, split-K) and direct
// code on the FP32 units. `matrix_peak_gflops` is the peak its dtype runs at.
double linear_time_us(const GemmShape& shape, const DeviceSpec& device, double matrix_peak_gflops);

}  // namespace orchid
