#include "cli/cost_options.hpp"

#include <chrono>
#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "cost/device_spec_toml.hpp"
#include "profile/cuda_kernel_timer.hpp"
#include "profile/profile_db.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"

namespace orchid::cli {

namespace {

// A calibration whose typical ratio predicted/measured stays above this is reported.
constexpr double kFarOffRatio = 1.5;

std::string correlation(double rho) {
  return std::isnan(rho) ? "n/a" : fmt::format("{:.3f}", rho);
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d", &tm);
  return buffer;
}

void write_calibrated_device(const MeasuredCostModel& model, const CostCliOptions& options,
                             const std::string& model_path) {
  const CalibrationResult& c = model.stats().calibration;
  if (!c.ok) fail("--calibrate-out {}: not written: {}", options.calibrate_out, c.note);
  DeviceSpec spec = c.device;
  if (spec.description.find("(calibrated") == std::string::npos) {
    spec.description += fmt::format(" (calibrated {})", today());
  }
  std::string header = fmt::format(
      "Calibrated device file, written by `orchid orchestrate {} --device {} --profile "
      "--calibrate-out {}` on {}.\n"
      "Least-squares fit (log space) of the analytic model to {} kernels measured on this\n"
      "machine (profile database {}); base file {}.\n"
      "Spearman rank correlation predicted vs measured: {} before, {} after ({} two-fold "
      "held-out);\n"
      "rms log error {:.3f} -> {:.3f}{}.\n"
      "Fitted:",
      model_path, model.device().name, options.calibrate_out, today(), c.kernels,
      model.database().path(),
      model.device().source_file.empty() ? "(built in)" : model.device().source_file,
      correlation(c.spearman_before), correlation(c.spearman_after),
      correlation(c.spearman_after_heldout), c.rms_log_error_before, c.rms_log_error_after,
      std::exp(c.rms_log_error_after) > kFarOffRatio
          ? fmt::format(" (STAYS FAR OFF: typical ratio {:.2f}x)", std::exp(c.rms_log_error_after))
          : "");
  for (const auto& p : c.parameters) {
    header += fmt::format("\n  {} {:.6g} -> {:.6g}{}", p.key, p.before, p.after,
                          !p.fitted    ? " (no measured kernel depends on it: kept)"
                          : p.at_bound ? " (at its bound)"
                                       : "");
  }
  header += "\nUse it with --device " + options.calibrate_out +
            "; measurements stay keyed by the name below.";
  write_file_atomically(options.calibrate_out, device_spec_to_toml(spec, header));
  fmt::print("wrote {}\n", options.calibrate_out);
}

}  // namespace

void add_cost_options(CLI::App& command, CostCliOptions& options, bool calibrate) {
  command.add_flag("--profile", options.profile,
                   "Cost kernels by timing them on this CPU (with --device cpu); measurements "
                   "are kept in a profile database and reused");
  command.add_option("--profile-db", options.profile_db,
                     "Profile database file (default $XDG_CACHE_HOME/orchid/"
                     "profile-<device>.json or ~/.cache/orchid/...)");
  command
      .add_option("--context-rounds", options.context_rounds,
                  "On this CPU (with --profile, or `run`'s default plan selection): "
                  "orchestrations that may run the optimal plan whole to time its kernels "
                  "where they run, their in-context times becoming their costs (kept in "
                  "context-cpu-<isa>-t<threads>.json beside the profile database); 0: costs "
                  "from the cost model alone")
      ->default_val(options.context_rounds)
      ->check(CLI::Range(0, 20));
  if (calibrate) {
    command.add_option("--calibrate-out", options.calibrate_out,
                       "With --profile: fit the analytic model to the measurements and write "
                       "the calibrated device TOML here");
  }
}

std::unique_ptr<CostModel> make_cost_model(const DeviceSpec& device,
                                           const CostCliOptions& options) {
  if (!options.profile) {
    if (!options.profile_db.empty()) fail("--profile-db needs --profile");
    if (!options.calibrate_out.empty()) fail("--calibrate-out needs --profile");
    return make_analytic_cost_model(device);
  }
  if (options.cuda) {
    // Kernels timed as generated CUDA on the present GPU (profile/cuda_kernel_timer).
    const std::string gpu = require_cuda_timer("--profile");
    MeasuredCostOptions mo;
    mo.db_path =
        options.profile_db.empty() ? default_profile_db_path(device.name) : options.profile_db;
    mo.device_timer = [](const KernelView& k, const KernelTimerOptions& t) {
      return time_kernel_cuda(k, t);
    };
    mo.device_timer_version = kCudaKernelTimerVersion;
    fmt::print(stderr, "profile      timing kernels on {} (generated CUDA, CUDA events)\n", gpu);
    return std::make_unique<MeasuredCostModel>(device, mo);
  }
  if (device.kind != "cpu") {
    fail(
        "--profile times kernels on this machine's CPU: use --device cpu (device '{}' is a {}; "
        "`orchid run MODEL --device cuda --profile` times them on an NVIDIA GPU)",
        device.name, device.kind);
  }
  MeasuredCostOptions mo;
  mo.db_path =
      options.profile_db.empty() ? default_profile_db_path(device.name) : options.profile_db;
  return std::make_unique<MeasuredCostModel>(device, mo);
}

Orchestration orchestrate_with_costs(const Graph& model, const CostModel& costs,
                                     const CostCliOptions& options,
                                     const OrchestrateOptions& orchestrate_options, bool in_context,
                                     InContextReport* report) {
  if (!in_context) return orchestrate(model, costs, orchestrate_options);
  return orchestrate_with_costs(fission(model, fission_options(orchestrate_options)), costs,
                                options, orchestrate_options, in_context, report);
}

Orchestration orchestrate_with_costs(FissionResult primitives, const CostModel& costs,
                                     const CostCliOptions& options,
                                     const OrchestrateOptions& orchestrate_options, bool in_context,
                                     InContextReport* report, PackedWeights* packing) {
  if (!in_context) return orchestrate(std::move(primitives), costs, orchestrate_options);
  const InContextCostModel refined(costs, "cpu", in_context_db_path(options.profile_db));
  InContextOptions o;
  o.max_rounds = options.context_rounds;
  o.progress = true;
  o.packing = packing;
  return orchestrate_in_context(std::move(primitives), refined, orchestrate_options, o, report);
}

void report_measured_costs(const CostModel& model, const CostCliOptions& options,
                           const std::string& model_path) {
  const auto* measured = dynamic_cast<const MeasuredCostModel*>(&model);
  if (!measured) return;
  const MeasuredCostStats& s = measured->stats();
  fmt::print(
      "profile      {} distinct kernels: {} timed, {} reused from {}, {} fell back to the "
      "analytic model\n",
      s.kernels, s.timed, s.reused, measured->database().path(), s.fell_back);
  fmt::print("             profiling wall time {:.2f} s\n", s.profiling_seconds);
  if (s.noisy > 0) {
    fmt::print(
        "             {} kernel(s) too noisy to store (p90/p10 > {} after {} re-timings; is "
        "something else loading the machine?): used for this run only\n",
        s.noisy, ProfileEntry::kMaxSpread, MeasuredCostOptions{}.noisy_retries);
  }
  for (const auto& e : s.fallback_examples) fmt::print("             fell back: {}\n", e);
  const CalibrationResult& c = s.calibration;
  fmt::print(
      "rank corr.   Spearman analytic vs measured {} over {} kernels; calibrated {} "
      "(two-fold held-out {})\n",
      correlation(c.spearman_before), c.kernels, correlation(c.spearman_after),
      correlation(c.spearman_after_heldout));
  if (c.ok) {
    std::string fitted;
    for (const auto& p : c.parameters) {
      if (!p.fitted) continue;
      fitted += fmt::format("{}{} {:.4g} -> {:.4g}{}", fitted.empty() ? "" : ", ", p.key, p.before,
                            p.after, p.at_bound ? " (bound)" : "");
    }
    fmt::print("calibration  {}\n", fitted);
    fmt::print(
        "             rms log error {:.3f} -> {:.3f} (typical ratio predicted/measured {:.2f}x "
        "-> {:.2f}x)\n",
        c.rms_log_error_before, c.rms_log_error_after, std::exp(c.rms_log_error_before),
        std::exp(c.rms_log_error_after));
    if (std::exp(c.rms_log_error_after) > kFarOffRatio) {
      fmt::print(
          "warning      the calibrated model stays far off: a typical kernel is {:.2f}x off "
          "(over {:.1f}x); its terms cannot express what these kernels do, trust the "
          "measurements, not the calibrated figures\n",
          std::exp(c.rms_log_error_after), kFarOffRatio);
    }
  } else {
    fmt::print("calibration  not done: {}\n", c.note);
  }
  if (!options.calibrate_out.empty()) write_calibrated_device(*measured, options, model_path);
}

void add_plan_kind_option(CLI::App& command, std::string& kind, const std::string& what) {
  command.add_option("--plan-kind", kind, what)
      ->default_val("optimal")
      ->check(
          CLI::IsMember(std::vector<std::string>(std::begin(kPlanKinds), std::end(kPlanKinds))));
}

const Plan& plan_of_kind(const Orchestration& o, const std::string& kind) {
  if (kind == "optimal") return o.optimal;
  if (kind == "operator-level") return o.operator_level;
  if (kind == "per-primitive") return o.per_primitive;
  if (kind == "greedy-fusion") return o.greedy;
  fail("--plan-kind: unknown kind '{}' (optimal, operator-level, per-primitive, greedy-fusion)",
       kind);
}

}  // namespace orchid::cli
