// Measured kernel costs: a CostModel whose latency_us() is the median time of the kernel
// run by the CPU plan executor on this machine, from the profile database (ProfileDb,
// keyed by kernel_signature) or, on a miss, timed now (kernel_timer) and stored.
//
// prepare() (called by orchestrate() with every kernel it will ask about) times all
// missing kernels in one batch with a progress report, saves the database, and compares
// the analytic model with the measurements: Spearman rank correlation before and after
// calibrating the analytic model's parameters to them (calibration.hpp). Kernels that
// cannot be timed are costed by the analytic model, calibrated when there were enough
// measurements (so they sit on the same scale), and counted.
//
// Deterministic given the database: a run whose kernels are all in it times nothing and
// returns exactly the stored numbers (also remembered for kernels that failed to time),
// so the same model gives the same plan.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cost/cost_model.hpp"
#include "cost/device_spec.hpp"
#include "profile/calibration.hpp"
#include "profile/kernel_timer.hpp"
#include "profile/profile_db.hpp"

namespace orchid {

struct MeasuredCostOptions {
  std::string db_path;  // the profile database file (see default_profile_db_path)
  KernelTimerOptions timer;
  bool progress = true;  // progress report on stderr while timing
  std::size_t min_calibration_kernels = 8;
  bool calibrated_fallback = true;  // cost untimeable kernels with the calibrated model
  // Another device's timer (cuda_kernel_timer.hpp) instead of time_kernel on this CPU,
  // with its own methodology version; the device then need not be a CPU.
  std::function<KernelTiming(const KernelView&, const KernelTimerOptions&)> device_timer;
  int device_timer_version = 0;
  int noisy_retries = 2;  // times a kernel too noisy to store is timed again (longer)
  double max_stored_spread = ProfileEntry::kMaxSpread;  // p90/p10 above it: not stored
};

struct MeasuredCostStats {
  std::size_t kernels = 0;                     // distinct kernel signatures asked about
  std::size_t timed = 0;                       // measured in this run
  std::size_t reused = 0;                      // found in the database
  std::size_t fell_back = 0;                   // could not be timed (now or before): analytic cost
  std::vector<std::string> fallback_examples;  // "<kernel>: <why>", the first few
  std::size_t noisy = 0;  // timed but too noisy to store (ProfileEntry::too_noisy), kept in memory
  double profiling_seconds = 0;  // wall time spent timing kernels
  // Over the measured kernels of the last prepare(): analytic model vs measurement.
  CalibrationResult calibration;
};

class MeasuredCostModel final : public CostModel {
 public:
  // `device` must be a CPU (this machine); opens the database (orchid::Error naming the
  // file if it is corrupt or for another device).
  MeasuredCostModel(DeviceSpec device, MeasuredCostOptions options);
  ~MeasuredCostModel() override;  // saves measurements not yet saved

  double latency_us(const KernelView& kernel) const override;
  std::string describe() const override;
  void prepare(const std::vector<KernelView>& kernels) const override;

  const MeasuredCostStats& stats() const { return stats_; }
  const ProfileDb& database() const { return db_; }
  const DeviceSpec& device() const { return device_; }
  // Writes the database now (atomically).
  void save() const;

 private:
  struct Known {
    double us = 0;
    bool measured = false;
  };
  // Database or timer result for a kernel not seen yet; records it in stats and cache.
  const Known& resolve(std::uint64_t signature, const KernelView& kernel) const;
  // Caches the entry's cost (the fallback's if it failed) and counts it.
  const Known& remember(std::uint64_t signature, const KernelView& kernel,
                        const ProfileEntry& entry) const;
  // The database entry if it was measured by this timer version, else a noisy timing
  // of this run that was not stored.
  const ProfileEntry* stored(std::uint64_t signature) const;
  // Times the kernel and stores the result; true if it could be timed.
  bool measure(std::uint64_t signature, const KernelView& kernel) const;
  double fallback_us(const KernelView& kernel) const;
  int timer_version() const {
    return options_.device_timer ? options_.device_timer_version : kKernelTimerVersion;
  }

  DeviceSpec device_;
  MeasuredCostOptions options_;
  mutable ProfileDb db_;
  mutable std::unordered_map<std::uint64_t, ProfileEntry> unstored_;  // too noisy to store
  mutable std::unordered_map<std::uint64_t, Known> cache_;
  mutable MeasuredCostStats stats_;
  mutable DeviceSpec fallback_device_;
};

}  // namespace orchid
