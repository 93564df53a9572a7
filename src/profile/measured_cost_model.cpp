#include "profile/measured_cost_model.hpp"

#include <chrono>
#include <cstdio>
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
  if (entry.ok()) {
    known.us = entry.median_us;
    known.measured = true;
  } else {
    ++stats_.fell_back;
    if (stats_.fallback_examples.size() < kFallbackExamples) {
      stats_.fallback_examples.push_back(fmt::format("{}: {}", entry.kernel, entry.error));
    }
    known.us = fallback_us(kernel);
  }
  return cache_.emplace(signature, known).first->second;
}

const ProfileEntry* MeasuredCostModel::stored(std::uint64_t signature) const {
  const ProfileEntry* e = db_.find(signature);
  // (An in-context entry, in a database given as both, is no timing alone.)
  if (e && e->timer_version == timer_version() && (!e->ok() || e->timed_alone())) return e;
  auto noisy = unstored_.find(signature);
  return noisy == unstored_.end() ? nullptr : &noisy->second;
}

const MeasuredCostModel::Known& MeasuredCostModel::resolve(std::uint64_t signature,
                                                           const KernelView& kernel) const {
  auto it = cache_.find(signature);
  if (it != cache_.end()) return it->second;
  const ProfileEntry* e = stored(signature);
  if (e) {
    if (e->ok()) ++stats_.reused;
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
  std::unordered_set<std::uint64_t> just_timed;
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
      just_timed.insert(signatures[i]);
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

  // Fill the cache (and the counts) now that the fallback is settled.
  for (std::size_t i = 0; i < signatures.size(); ++i) {
    if (cache_.count(signatures[i])) continue;
    const ProfileEntry* e = stored(signatures[i]);
    if (e->ok() && !just_timed.count(signatures[i])) ++stats_.reused;
    remember(signatures[i], *first[i], *e);
  }
}

}  // namespace orchid
