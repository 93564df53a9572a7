// GPU layer costs from the kernel orchestrator: a GPU design's cost of a layer is the
// optimal plan's total time for the layer's subgraph (layer_subgraph.hpp) under the
// analytic model of the GPU's device spec (configs/devices/<name>.toml). Costs are
// memoised by layer signature (repeated blocks and shards of equal shape are orchestrated
// once). FPGA designs keep the analytic FPGA models. If a layer's subgraph cannot be
// built or orchestrated, or the GPU was described inline without a device file, the
// roofline (gpu_roofline_seconds) prices it instead and the fallback is counted.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cost/cost_model.hpp"
#include "mapping/layer_cost.hpp"

namespace orchid::mapping {

struct OrchestratedCostStats {
  std::size_t layers_orchestrated = 0;  // distinct subgraphs orchestrated successfully
  std::size_t memo_hits = 0;
  std::size_t fallbacks = 0;                // distinct subgraphs priced by the roofline instead
  std::vector<std::string> fallback_notes;  // first few reasons
  double seconds = 0;                       // spent orchestrating
};

class OrchestratedCostProvider : public LayerCostProvider {
 public:
  // `time_limit_s`: BLP time limit per layer subgraph.
  explicit OrchestratedCostProvider(double time_limit_s = 5);
  ~OrchestratedCostProvider() override;
  double compute_seconds(const Layer& layer, const Design& design) const override;
  OrchestratedCostStats stats() const;

 private:
  const CostModel* model_for(const GpuSpec& gpu, std::string& why) const;

  double time_limit_s_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, std::unique_ptr<CostModel>> models_;  // by spec path
  mutable std::map<std::string, std::string> model_errors_;
  mutable std::map<std::string, double> memo_;  // device | signature -> seconds
  mutable OrchestratedCostStats stats_;
};

}  // namespace orchid::mapping
