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
// In-context times: record_in_context() stores a kernel's median time inside whole-plan
// runs (profile/in_context_costs.hpp). From then on that time is the kernel's cost. The
// isolated times of kernels not yet timed in context are scaled by how in-context times
// compare with isolated ones over this model's kernels timed both ways (separately for
// kernels with a convolution or matmul and for memory-bound ones), so that both sit on
// one scale.
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
#include <unordered_set>
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
  // Of `kernels`: costed by their time inside whole-plan runs (record_in_context).
  std::size_t in_context = 0;
  // In-context times recorded with p90/p10 above the database's limit (after re-timing;
  // stored with their spread, see record_in_context).
  std::size_t noisy_in_context = 0;
  // Factors on the isolated times of the other kernels (sum of in-context over sum of
  // isolated times, over this model's kernels timed both ways; 1 without enough), for
  // kernels with a linear primitive and for the others, and how many kernels each rests on.
  double context_scale_linear = 1;
  double context_scale_other = 1;
  std::size_t context_scale_samples_linear = 0;
  std::size_t context_scale_samples_other = 0;
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

  // The kernel's median time over `reps` whole-plan runs, stored with its spread p90/p10
  // (the caller has re-timed it if that was wide; counted in noisy_in_context). Costs
  // asked for afterwards (the next prepare()) use it.
  void record_in_context(const KernelView& kernel, double median_us, double p10_us, double p90_us,
                         int reps) const;
  // Whether the kernel's cost is an in-context time (stored, or recorded by this object).
  bool timed_in_context(const KernelView& kernel) const;

 private:
  struct Known {
    double us = 0;
    bool measured = false;
  };
  // The in-context time recorded for the signature, 0 if none.
  double context_us(std::uint64_t signature) const;
  // Sets the scales of stats_ from the kernels of `signatures` timed both ways.
  void fit_context_scales(const std::vector<std::uint64_t>& signatures,
                          const std::vector<const KernelView*>& views) const;
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
  mutable std::unordered_map<std::uint64_t, double> noisy_context_us_;  // too noisy to store
  mutable std::unordered_set<std::uint64_t> timed_now_;  // measured alone by this object
  mutable MeasuredCostStats stats_;
  mutable DeviceSpec fallback_device_;
};

}  // namespace orchid
