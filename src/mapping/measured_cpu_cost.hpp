// Layer costs of CPU-cluster ranks, measured: a CPU design's cost of a (sharded) layer is
// the median of 3 to 25 runs (more while they add up to under 20 ms), each after evicting the
// caches (one thread: its CPU time, so other processes on the machine do not inflate it) of the
// layer's subgraph (layer_subgraph.hpp, the shard's exact shapes) run by the CPU plan executor with
// the design's thread count, under the plan the kernel orchestrator picks for the given CPU cost
// model, results copied out as the plan runner does. One sample is measured and the batch
// multiplies it (the runner runs the batch-1 model once per sample). Memoised by (threads,
// signature), so repeated blocks and equal shards are measured once. Other designs are delegated.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "cost/cost_model.hpp"
#include "mapping/layer_cost.hpp"

namespace orchid::mapping {

struct MeasuredCpuCostStats {
  std::size_t measured = 0;  // distinct subgraphs timed
  int passes = 1;            // times each was timed (measure_again: the faster kept)
  std::size_t memo_hits = 0;
  std::size_t fallbacks = 0;  // subgraphs priced by the roofline (could not be built/run)
  std::string first_fallback;
  double seconds = 0;  // spent measuring
};

class MeasuredCpuCostProvider : public LayerCostProvider {
 public:
  // `cpu_model` orchestrates each layer subgraph (e.g. the analytic model of
  // configs/devices/cpu.toml); `others` prices non-CPU designs. Both must outlive this.
  // `model_bytes`: what one inference of the whole model touches (weights and
  // activations); before each timed run that much (at most 1.5x the last-level cache) is
  // written elsewhere, as the rest of the model does between two runs of a layer.
  MeasuredCpuCostProvider(const CostModel& cpu_model, const LayerCostProvider& others,
                          double model_bytes = 1e18, double target_seconds = 0.02);
  double compute_seconds(const Layer& layer, const Design& design) const override;
  // Times every subgraph measured so far once more and keeps the faster median of the
  // two: a slow spell of a shared machine (seconds long, 1.2-1.5x) lands on one pass of
  // a layer, rarely on both (MobileNetV2's 1-rank plan was priced 34.9 to 41.4 ms by two
  // single passes of `orchid map`, and ran 34-36 ms). Callers price again afterwards.
  void measure_again();
  MeasuredCpuCostStats stats() const;

 private:
  double measure(const Layer& layer, const Design& design, std::string& why) const;
  struct Measured {
    Layer layer;  // one sample
    Design design;
    double seconds = 0;
    bool fallback = false;
  };

  const CostModel& cpu_model_;
  const LayerCostProvider& others_;
  std::size_t evict_bytes_;
  double target_seconds_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, Measured> memo_;
  mutable MeasuredCpuCostStats stats_;
};

}  // namespace orchid::mapping
