// The device-level pipeline: fission -> regions -> candidate kernels -> costs -> BLP per
// region (CBC) -> executable plan, with the three baselines costed by the same model.
#pragma once

#include <string>
#include <vector>

#include "cost/cost_model.hpp"
#include "fission/fission.hpp"
#include "orchestrate/candidates.hpp"
#include "orchestrate/plan.hpp"
#include "orchestrate/selection_blp.hpp"

namespace orchid {

struct OrchestrateOptions {
  CandidateRules rules;
  std::size_t region_target_size = 48;  // primitives per region before the next cut
  double time_limit_s = 60;             // for all BLPs together
  bool softmax_matmul_alternative = true;
  bool int8_linear = true;  // FissionOptions::int8_linear (QDQ Conv/MatMul as int8 primitives)
  // Plans to rank by predicted cost (Orchestration::ranked): the optimum, then the next
  // best distinct selections (no-good cuts on each region's earlier selections).
  std::size_t k_best = 1;
  double k_best_time_limit_s = 10;  // for the extra BLP solves together
};

struct OrchestrationStats {
  std::size_t model_nodes = 0;
  std::size_t primitives = 0;  // main graph
  std::size_t alternative_primitives = 0;
  std::size_t regions = 0;
  std::size_t possible_cuts = 0;
  std::size_t multi_tensor_cuts = 0;  // wide regions cut again where a few tensors are live
  std::size_t candidates = 0;
  std::size_t largest_region_candidates = 0;
  std::size_t cycle_cuts = 0;  // no-goods added for unschedulable selections
  double blp_objective_us = 0;
  double blp_bound_us = 0;
  double blp_gap = 0;  // worst region gap
  long blp_nodes = 0;
  double enumerate_seconds = 0;
  double cost_seconds = 0;
  double solve_seconds = 0;
  double k_best_seconds = 0;  // extra solves for the ranked plans
  double total_seconds = 0;
  bool proven_optimal = true;
};

struct Orchestration {
  FissionResult fission;  // the primitive graph every plan indexes into
  Plan optimal;
  Plan operator_level;
  Plan per_primitive;
  Plan greedy;
  // With k_best > 1: up to k distinct plans in non-decreasing predicted cost, `optimal`
  // first (kinds "optimal", "optimal-2", ...). Empty when k_best <= 1.
  std::vector<Plan> ranked;
  OrchestrationStats stats;
  std::string device;
};

Orchestration orchestrate(const Graph& model, const CostModel& cost_model,
                          const OrchestrateOptions& options = {});
// The same from a fission done before (fission(model, fission_options(options))): the
// primitive graph is taken over, not copied, so a caller can drop the model's weights
// once it exists. Orchestrating a result's `fission` again keeps its node order.
Orchestration orchestrate(FissionResult primitives, const CostModel& cost_model,
                          const OrchestrateOptions& options = {});
FissionOptions fission_options(const OrchestrateOptions& options);

}  // namespace orchid
