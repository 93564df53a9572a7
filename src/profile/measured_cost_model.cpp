#include "profile/measured_cost_model.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <unordered_set>

#include <fmt/format.h>

#include "cost/analytic_cost_model.hpp"
#include "cost/kernel_signature.hpp"
#include "util/error.hpp"
#include "util/progress.hpp"

namespace orchid {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kFallbackExamples = 5;
constexpr double kSaveEverySeconds = 30;  // while profiling, so an interrupted run keeps most
// Kernels timed both ways that a scale rests on (fewer: the pooled scale, or none).
constexpr std::size_t kMinScaleSamples = 3;

// Kernels with a convolution or matmul: their in-context times differ from isolated ones
// in other ways (weights, oneDNN's blocking) than memory-bound kernels' do.
bool has_linear_primitive(const KernelView& kernel) {
  GemmShape shape;
  for (std::size_t n : kernel.nodes) {
    if (linear_gemm_shape(*kernel.graph, kernel.graph->nodes[n], shape)) return true;
  }
  return false;
}

}  // namespace

MeasuredCostModel::MeasuredCostModel(DeviceSpec device, MeasuredCostOptions options)
    : device_(std::move(device)),
      options_(std::move(options)),
      db_(ProfileDb::open(options_.db_path, device_.name, options_.max_stored_spread)),
      fallback_device_(device_) {
  if (device_.kind != "cpu" && !options_.device_timer) {
    fail(
        "measured costs time kernels on this machine's CPU; device '{}' is a {} (use a cpu "
        "device)",
        device_.name, device_.kind);
  }
  if (options_.db_path.empty()) fail("measured cost model: no profile database path");
}

MeasuredCostModel::~MeasuredCostModel() {
  if (!db_.dirty()) return;
  try {
    db_.save();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "orchid: warning: measurements not saved: %s\n", e.what());
  }
}

void MeasuredCostModel::save() const {
  db_.save();
}

std::string MeasuredCostModel::describe() const {
  return fmt::format("measured on {} ({}), profile database {} ({} kernels)", device_.name,
                     device_.description, db_.path(), db_.size());
}

double MeasuredCostModel::fallback_us(const KernelView& kernel) const {
  return analytic_kernel_cost(kernel, fallback_device_).total_us;
}

bool MeasuredCostModel::measure(std::uint64_t signature, const KernelView& kernel) const {
  const auto start = Clock::now();
  // A spread too wide to reuse (another process took the core meanwhile): time it again,
  // longer, and keep the tightest attempt; if every attempt is noisy, use it for this run
  // only and leave the database without it.
  ProfileEntry e;
  KernelTimerOptions timer = options_.timer;
  for (int attempt = 0; attempt <= options_.noisy_retries; ++attempt) {
    const KernelTiming t =
        options_.device_timer ? options_.device_timer(kernel, timer) : time_kernel(kernel, timer);
    ProfileEntry now;
    now.timer_version = timer_version();
    now.kernel = kernel_summary(kernel);
    if (t.ok) {
      now.median_us = std::max(t.median_us, 1e-3);
      now.p10_us = t.p10_us;
      now.p90_us = t.p90_us;
      now.reps = t.reps;
    } else {
      now.error = t.error.empty() ? "unknown error" : t.error;
    }
    const bool better =
        attempt == 0 || (now.ok() && (!e.ok() || now.p90_us / now.p10_us < e.p90_us / e.p10_us));
    if (better) e = std::move(now);
    if (!e.too_noisy(options_.max_stored_spread)) break;
    timer.target_seconds *= 2;
  }
  stats_.profiling_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  const bool ok = e.ok();
  if (e.ok()) timed_now_.insert(signature);
  if (e.too_noisy(options_.max_stored_spread)) {
    ++stats_.noisy;
    unstored_[signature] = std::move(e);
  } else {
    unstored_.erase(signature);
    db_.put(signature, std::move(e));
  }
  if (ok) ++stats_.timed;
  return ok;
}

const MeasuredCostModel::Known& MeasuredCostModel::remember(std::uint64_t signature,
                                                            const KernelView& kernel,
                                                            const ProfileEntry& entry) const {
  ++stats_.kernels;
  Known known;
  const double scale =
      has_linear_primitive(kernel) ? stats_.context_scale_linear : stats_.context_scale_other;
  if (const double in_context = context_us(signature); in_context > 0) {
    known.us = in_context;
    known.measured = true;
    ++stats_.in_context;
  } else if (entry.ok()) {
    known.us = entry.median_us * scale;
    known.measured = true;
  } else {
    ++stats_.fell_back;
    if (stats_.fallback_examples.size() < kFallbackExamples) {
      stats_.fallback_examples.push_back(fmt::format("{}: {}", entry.kernel, entry.error));
    }
    known.us = fallback_us(kernel) * scale;
  }
  return cache_.emplace(signature, known).first->second;
}

double MeasuredCostModel::context_us(std::uint64_t signature) const {
  const ProfileEntry* e = stored(signature);
  if (e && e->context_us > 0) return e->context_us;
  auto noisy = noisy_context_us_.find(signature);
  return noisy == noisy_context_us_.end() ? 0 : noisy->second;
}

bool MeasuredCostModel::timed_in_context(const KernelView& kernel) const {
  return context_us(kernel_signature(kernel, device_.name)) > 0;
}

void MeasuredCostModel::record_in_context(const KernelView& kernel, double median_us, double p10_us,
                                          double p90_us, int reps) const {
  const std::uint64_t signature = kernel_signature(kernel, device_.name);
  const double spread = options_.max_stored_spread;
  // Taken after re-timing (in_context_costs.cpp): stored with its spread, so that the
  // next run reuses it (the same plan) rather than timing it again.
  if (spread < std::numeric_limits<double>::infinity() && !(p90_us <= spread * p10_us)) {
    ++stats_.noisy_in_context;
  }
  const ProfileEntry* e = db_.find(signature);
  if (e && e->timer_version == timer_version()) {
    ProfileEntry updated = *e;
    updated.context_us = std::max(median_us, 1e-3);
    updated.context_spread = p10_us > 0 ? p90_us / p10_us : 0;
    updated.context_reps = reps;
    db_.put(signature, std::move(updated));
  } else {  // its isolated timing was too noisy to store: this object only
    noisy_context_us_[signature] = std::max(median_us, 1e-3);
  }
  // Every cost may change (the scales too): the next prepare() settles them again.
  cache_.clear();
  stats_.kernels = stats_.reused = stats_.fell_back = stats_.in_context = 0;
  stats_.fallback_examples.clear();
}

void MeasuredCostModel::fit_context_scales(const std::vector<std::uint64_t>& signatures,
                                           const std::vector<const KernelView*>& views) const {
  // Ratios of sums (in-context over isolated), per class and pooled: weighted by time, so
  // that the kernels that make up a plan's time set the scale, not the many tiny ones
  // whose in-context time is mostly the executor's fixed cost per kernel.
  double in_context_sum[2] = {0, 0};
  double isolated_sum[2] = {0, 0};
  std::size_t count[2] = {0, 0};
  for (std::size_t i = 0; i < signatures.size(); ++i) {
    const ProfileEntry* e = stored(signatures[i]);
    const double in_context = context_us(signatures[i]);
    if (!e || !e->ok() || !(in_context > 0)) continue;
    const int linear = has_linear_primitive(*views[i]) ? 1 : 0;
    in_context_sum[linear] += in_context;
    isolated_sum[linear] += e->median_us;
    ++count[linear];
  }
  const std::size_t pooled = count[0] + count[1];
  const auto scale = [&](int c) {
    if (count[c] >= kMinScaleSamples) return in_context_sum[c] / isolated_sum[c];
    if (pooled >= kMinScaleSamples) {
      return (in_context_sum[0] + in_context_sum[1]) / (isolated_sum[0] + isolated_sum[1]);
    }
    return 1.0;
  };
  stats_.context_scale_other = scale(0);
  stats_.context_scale_linear = scale(1);
  stats_.context_scale_samples_other = count[0];
  stats_.context_scale_samples_linear = count[1];
}

const ProfileEntry* MeasuredCostModel::stored(std::uint64_t signature) const {
  const ProfileEntry* e = db_.find(signature);
  if (e && e->timer_version == timer_version()) return e;
  auto noisy = unstored_.find(signature);
  return noisy == unstored_.end() ? nullptr : &noisy->second;
}

const MeasuredCostModel::Known& MeasuredCostModel::resolve(std::uint64_t signature,
                                                           const KernelView& kernel) const {
  auto it = cache_.find(signature);
  if (it != cache_.end()) return it->second;
  const ProfileEntry* e = stored(signature);
  if (e) {
    if (e->ok() && !timed_now_.count(signature)) ++stats_.reused;
  } else {
    measure(signature, kernel);
    e = stored(signature);
  }
  return remember(signature, kernel, *e);
}

double MeasuredCostModel::latency_us(const KernelView& kernel) const {
  return resolve(kernel_signature(kernel, device_.name), kernel).us;
}

void MeasuredCostModel::prepare(const std::vector<KernelView>& kernels) const {
  // Distinct signatures, first view of each, in the order given (deterministic).
  std::vector<std::uint64_t> signatures;
  std::vector<const KernelView*> first;
  std::unordered_set<std::uint64_t> seen;
  for (const auto& k : kernels) {
    const std::uint64_t s = kernel_signature(k, device_.name);
    if (seen.insert(s).second) {
      signatures.push_back(s);
      first.push_back(&k);
    }
  }
  std::vector<std::size_t> to_time;
  for (std::size_t i = 0; i < signatures.size(); ++i) {
    if (cache_.count(signatures[i])) continue;
    if (!stored(signatures[i])) to_time.push_back(i);
  }
  if (!to_time.empty()) {
    ProgressReporter progress("profiling", "kernels", to_time.size(),
                              options_.progress ? stderr : nullptr);
    auto last_save = Clock::now();
    for (std::size_t n = 0; n < to_time.size(); ++n) {
      const std::size_t i = to_time[n];
      measure(signatures[i], *first[i]);
      progress.update(n + 1);
      if (std::chrono::duration<double>(Clock::now() - last_save).count() > kSaveEverySeconds) {
        db_.save();
        last_save = Clock::now();
      }
    }
    progress.finish();
    db_.save();
  }

  // Analytic model vs measurements over the measured kernels; calibrated fallback.
  std::vector<KernelView> measured_views;
  std::vector<double> measured_us;
  for (std::size_t i = 0; i < signatures.size(); ++i) {
    const ProfileEntry* e = stored(signatures[i]);
    if (e && e->ok()) {
      measured_views.push_back(*first[i]);
      measured_us.push_back(e->median_us);
    }
  }
  stats_.calibration =
      calibrate_device(device_, measured_views, measured_us, options_.min_calibration_kernels);
  if (options_.calibrated_fallback && stats_.calibration.ok) {
    fallback_device_ = stats_.calibration.device;
  }

  fit_context_scales(signatures, first);

  // Fill the cache (and the counts) now that the fallback and the scales are settled.
  for (std::size_t i = 0; i < signatures.size(); ++i) {
    if (cache_.count(signatures[i])) continue;
    const ProfileEntry* e = stored(signatures[i]);
    if (e->ok() && !timed_now_.count(signatures[i])) ++stats_.reused;
    remember(signatures[i], *first[i], *e);
  }
}

}  // namespace orchid
