// Calibration of the analytic cost model against measured kernel times: a least-squares
// fit, in log space (relative error, so a 5 us kernel weighs as much as a 5 ms one), of
// the device parameters that scale its terms:
//   launch_overhead_us          per-kernel fixed cost
//   dram_bandwidth_gbs          memory time (and the small-transfer term)
//   model.vector_efficiency     elementwise / reduction math throughput
//   model.transcendental_flops  cost of exp, erf, tanh, div... relative to an add
//   model.gemm_efficiency       tiled GEMM throughput
//   model.direct_linear_efficiency  depthwise conv / GEMV throughput
// by Levenberg-Marquardt on the real analytic model (its max/min kinks included), with
// bounds (efficiencies in (0, 1], everything positive). Parameters no kernel's predicted
// time depends on are left as they are.
#pragma once

#include <string>
#include <vector>

#include "cost/device_spec.hpp"
#include "fission/kernel_view.hpp"

namespace orchid {

struct CalibratedParameter {
  std::string key;  // as in the device TOML ("model.vector_efficiency")
  double before = 0;
  double after = 0;
  bool fitted = false;    // false: no measured kernel depends on it
  bool at_bound = false;  // the fit wanted to go past a bound (e.g. efficiency 1)
};

struct CalibrationResult {
  bool ok = false;
  std::string note;   // why not ok, or remarks
  DeviceSpec device;  // the calibrated spec (== the input when !ok)
  std::vector<CalibratedParameter> parameters;
  std::size_t kernels = 0;
  int iterations = 0;
  // sqrt(mean((ln predicted - ln measured)^2)); exp() of it is a typical ratio.
  double rms_log_error_before = 0;
  double rms_log_error_after = 0;
  // Spearman rank correlation of predicted vs measured, before and after (in sample),
  // and after for a two-fold fit (each half predicted by a fit to the other half).
  double spearman_before = 0;
  double spearman_after = 0;
  double spearman_after_heldout = 0;
};

// `kernels[i]` took `measured_us[i]`. Needs at least `min_kernels` samples (else !ok).
CalibrationResult calibrate_device(const DeviceSpec& base, const std::vector<KernelView>& kernels,
                                   const std::vector<double>& measured_us,
                                   std::size_t min_kernels = 8);

// Analytic predictions of `kernels` on `device` (total_us).
std::vector<double> analytic_predictions(const DeviceSpec& device,
                                         const std::vector<KernelView>& kernels);

}  // namespace orchid
