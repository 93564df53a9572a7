// Options that choose how `orchestrate` and `run` cost kernels (the analytic device
// model, or measurements on this CPU with --profile) and which plan they use.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "cost/cost_model.hpp"
#include "cost/device_spec.hpp"
#include "orchestrate/orchestrator.hpp"
#include "profile/in_context_costs.hpp"
#include "profile/measured_cost_model.hpp"

namespace orchid::cli {

struct CostCliOptions {
  bool profile = false;       // --profile: measured costs
  std::string profile_db;     // --profile-db PATH ("" = default_profile_db_path)
  std::string calibrate_out;  // --calibrate-out PATH: calibrated device TOML
  bool cuda = false;          // with --profile: time kernels on the NVIDIA GPU (--device cuda)
  int context_rounds = InContextOptions{}.max_rounds;  // --context-rounds
};
// --profile, --profile-db; --calibrate-out too when `calibrate` is set.
void add_cost_options(CLI::App& command, CostCliOptions& options, bool calibrate);

// The cost model the options ask for on `device`: analytic, or measured (on this CPU for
// a cpu device; on the present NVIDIA GPU with `cuda`; a clear error otherwise).
std::unique_ptr<CostModel> make_cost_model(const DeviceSpec& device, const CostCliOptions& options);

// orchestrate(); with `in_context` (costs for this CPU, --context-rounds above 0),
// orchestrate_in_context() over `costs` with --context-rounds, its times in the
// in-context database beside the profile database (its report in *report when given).
Orchestration orchestrate_with_costs(const Graph& model, const CostModel& costs,
                                     const CostCliOptions& options,
                                     const OrchestrateOptions& orchestrate_options, bool in_context,
                                     InContextReport* report = nullptr);
// The same from a fission done before; the in-context rounds' executors share `packing`
// (InContextOptions::packing).
Orchestration orchestrate_with_costs(FissionResult primitives, const CostModel& costs,
                                     const CostCliOptions& options,
                                     const OrchestrateOptions& orchestrate_options, bool in_context,
                                     InContextReport* report = nullptr,
                                     PackedWeights* packing = nullptr);

// Prints the measured-cost report (counts, wall time, rank correlation before and after
// calibration, fitted parameters) if `model` is measured; writes --calibrate-out.
void report_measured_costs(const CostModel& model, const CostCliOptions& options,
                           const std::string& model_path);

// --plan-kind KIND
inline const char* const kPlanKinds[] = {"optimal", "operator-level", "per-primitive",
                                         "greedy-fusion"};
void add_plan_kind_option(CLI::App& command, std::string& kind, const std::string& what);
const Plan& plan_of_kind(const Orchestration& orchestration, const std::string& kind);

}  // namespace orchid::cli
