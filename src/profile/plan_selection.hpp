// Picks the plan to run by timing candidate plans end to end on this machine: kernels
// in their real neighbourhood (caches, layouts, threads as in the model), which kernel
// costs measured or predicted alone cannot capture. The candidates are typically the
// orchestrator's k best plans plus greedy fusion, so the plan kept is never slower in
// this measurement than greedy fusion.
//
// All candidates are timed in interleaved rounds (one run of each per round, the order
// rotating), so a change in the machine's load hits them alike; when their executors
// would hold too much memory at once, each is timed in its own block instead.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "eval/reference_interpreter.hpp"
#include "ir/graph.hpp"
#include "orchestrate/orchestrator.hpp"
#include "orchestrate/plan.hpp"
#include "runtime/plan_executor.hpp"

namespace orchid {

struct PlanSelectionOptions {
  double budget_seconds = 3;  // timed runs of all candidates together, after warm-ups
  int min_rounds = 3;         // at least this many runs of each, whatever the budget
  int max_rounds = 30;
  std::int64_t interleave_bytes = std::int64_t{2} << 30;  // executors alive at once
  // The candidates' packing, shared with the caller's executors of the same graph (the
  // default command's: one that holds the graph's weights, packed_weights.hpp); it must
  // outlive the fastest executor. Null: one of their own.
  PackedWeights* packing = nullptr;
};

struct PlanTrial {
  std::string kind;
  double predicted_ms = 0;
  std::vector<double> times_ms;  // one per round
  double median_ms = 0;
  double cv = 0;  // coefficient of variation of times_ms
};

struct PlanSelection {
  std::vector<PlanTrial> trials;  // in the order the plans were given
  std::size_t fastest = 0;        // index into trials (lowest median; earlier wins ties)
  int rounds = 0;
  bool interleaved = true;
  double seconds = 0;  // wall time, executor construction and warm-ups included
  // The fastest plan's executor, warm, as timed: the caller runs it rather than building
  // (and packing weights for) a new one, so what runs is what was measured.
  std::unique_ptr<PlanExecutor> fastest_executor;
};

// `graph` and `alternatives` are the fission result every plan indexes into; `inputs`
// the model's inputs. Throws what the executor throws.
PlanSelection select_fastest_plan(const Graph& graph,
                                  const std::map<std::string, std::string>& alternatives,
                                  const std::vector<const Plan*>& plans, const TensorMap& inputs,
                                  const PlanSelectionOptions& options = {});

// The plans worth timing: the ranked plans (the optimum alone when none were ranked),
// then greedy fusion unless one of them has the same kernels (so greedy is always a
// candidate, and no plan is timed twice).
std::vector<const Plan*> plan_candidates(const Orchestration& orchestration);

// Coefficient of variation above which a timing is reported as noisy.
constexpr double kNoisyTimingCv = 0.10;

}  // namespace orchid
