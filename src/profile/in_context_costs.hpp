// Kernel costs taken inside whole-plan runs, and the orchestration that settles on them.
//
// A kernel timed alone (kernel_timer.hpp) finds its inputs and weights where a one-kernel
// run leaves them, and pays the run's fixed cost; inside a model its neighbours have just
// written its inputs, small models' weights stay cached from one inference to the next,
// and layouts are those the whole plan chose. Alone, SqueezeNet's kernels summed to 1.7x
// the time its plans took. So, with measured costs:
//
//   1. orchestrate with the costs as they are;
//   2. run the optimal plan (and, the first time, greedy fusion and the operator-level
//      plan) whole, on random inputs, timing every kernel (PlanExecutor::execute_timed);
//      each kernel's median becomes its cost (MeasuredCostModel::record_in_context, kept
//      in the profile database);
//   3. orchestrate again; stop when every kernel of the optimal plan was timed in context
//      (its predicted time is then the sum of its kernels' in-context medians). After
//      `max_rounds` rounds, the optimal plan becomes the cheapest plan whose kernels all
//      were timed in context (an earlier round's optimum, or a baseline): a prediction
//      that rests on guesses is not kept over one that was measured.
//
// Kernels never timed in context keep their isolated times, scaled to the in-context
// scale (see measured_cost_model.hpp), so the BLP compares like with like. Deterministic
// given the database: a second run finds every time stored and times nothing.
#pragma once

#include <cstdint>
#include <string>

#include "orchestrate/orchestrator.hpp"
#include "profile/measured_cost_model.hpp"

namespace orchid {

struct InContextOptions {
  int max_rounds = 8;             // orchestrations that may time plans (then one last one)
  int min_runs = 5;               // timed runs of each plan, at least ...
  int max_runs = 30;              // ... and at most
  double seconds_per_plan = 0.3;  // stop once this much time was spent in timed runs
  std::uint64_t seed = 0;         // random inputs (eval/random_inputs.hpp)
  int noisy_retries = 2;          // plan runs again while a kernel's times spread too wide
};

struct InContextReport {
  int rounds = 0;  // orchestrations that found kernels to time (plans run)
  int plans_timed = 0;
  std::size_t kernels_recorded = 0;  // distinct kernels given an in-context time
  bool settled = false;              // the optimal plan's kernels all have in-context times
  // Not settled at the round limit: which plan became `optimal` instead ("" if none
  // qualified), and the BLP optimum's predicted time it replaced.
  std::string kept_instead;
  double unverified_optimum_us = 0;
  double seconds = 0;  // wall time of the plan runs (orchestration excluded)
};

// Orchestrates `model` as orchestrate() does, refining `costs` as above; returns the last
// orchestration (its plans costed by the refined times).
Orchestration orchestrate_in_context(const Graph& model, const MeasuredCostModel& costs,
                                     const OrchestrateOptions& options,
                                     const InContextOptions& in_context = {},
                                     InContextReport* report = nullptr);

// One line for the CLI: rounds, plans, kernels, seconds, the scales on the rest.
std::string describe_in_context(const InContextReport& report, const MeasuredCostStats& stats);

}  // namespace orchid
