// One `map` job as a library call, shared by `orchid map` and the Python package: load
// the workload and the system, price layers (the kernel orchestrator for GPU designs,
// the CPU executor for CPU-cluster ranks, analytic models otherwise), cost the
// baselines, run the two-level GA seeded with them and schedule the winner.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cost/cost_model.hpp"
#include "mapping/baselines.hpp"
#include "mapping/genetic_search.hpp"
#include "mapping/measured_cpu_cost.hpp"
#include "mapping/orchestrated_cost.hpp"
#include "mapping/system.hpp"
#include "mapping/workload.hpp"
#include "util/config_roots.hpp"

namespace orchid::mapping {

struct MappingRequest {
  std::string workload;  // .onnx file, case file or benchmark case name
  ImportOptions import;  // input shapes and symbolic dims of an .onnx workload
  std::string system;    // a name in the config roots' systems/, or a system TOML path
  // When not empty, the system file's content; `system` then only names it and anchors
  // its relative paths (design library, devices).
  std::string system_text;
  std::int64_t batch = 1;
  SearchOptions search;       // seed, generations, population, threads, time limit
  bool gpu_roofline = false;  // price GPU layers by the roofline, not the orchestrator
};

class MappingRun {
 public:
  // Loads and prices everything (the slow part for GPU systems); search() maps.
  MappingRun(const MappingRequest& request, const ConfigRoots& roots);
  MappingRun(const MappingRun&) = delete;
  MappingRun& operator=(const MappingRun&) = delete;

  // Baselines, then the GA seeded with their plans (never worse than any of them).
  void search(const ProgressFn& progress = {});

  const Workload& workload() const { return workload_; }
  const System& system() const { return system_; }
  const Evaluator& evaluator() const { return *evaluator_; }
  bool orchestrates_gpus() const { return orchestrate_gpus_; }
  const OrchestratedCostProvider& orchestrated() const { return orchestrated_; }
  const MeasuredCpuCostProvider* measured() const { return measured_.get(); }
  // After search():
  const SearchResult& result() const { return result_; }
  const Schedule& schedule() const { return schedule_; }
  const std::vector<BaselineResult>& baselines() const { return baselines_; }  // H2H, DP, greedy
  // Name of the baseline whose plan won (empty when the GA's own did).
  const std::string& winning_seed() const { return winning_seed_; }
  double lower_bound() const { return evaluator_->lower_bound(); }
  // The plan JSON (`orchid map --json`, docs/mapping_format.md).
  std::string to_json() const;

 private:
  MappingRequest request_;
  Workload workload_;
  System system_;
  OrchestratedCostProvider orchestrated_;
  bool orchestrate_gpus_ = false;
  std::unique_ptr<CostModel> cpu_model_;
  std::unique_ptr<MeasuredCpuCostProvider> measured_;
  std::unique_ptr<Evaluator> evaluator_;
  SearchResult result_;
  Schedule schedule_;
  std::vector<BaselineResult> baselines_;
  std::string winning_seed_;
};

}  // namespace orchid::mapping
