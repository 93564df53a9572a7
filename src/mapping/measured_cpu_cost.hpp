// Layer costs of CPU-cluster ranks, measured: a CPU design's cost of a (sharded) layer is
// the time of the layer's subgraph (layer_subgraph.hpp, the shard's exact shapes) run by the
// CPU plan executor with the design's thread count, under the plan the kernel orchestrator
// picks for the given CPU cost model, results copied out as the plan runner does. One
// thread: the thread's CPU time, so other processes on the machine do not inflate it; more:
// wall time. One sample is measured and the batch multiplies it (the runner runs the batch-1
// model once per sample). Memoised by (threads, signature), so repeated blocks and equal
// shards are measured once. Other designs are delegated.
//
// Two passes. The first times each subgraph alone as it is first asked for: the median of
// 3 to 25 runs (more while they add up to under 20 ms), each after evicting the caches. The
// second, measure_in_context(), times the layers inside whole models: rounds run every
// layer asked for whole, one after another in the workload's order, as the runner runs a
// model's layers, each layer with its own executor and weights (repeated blocks too), and
// each costs its median over the rounds; its shards cost their times alone scaled as the
// whole layer's were. A layer runs twice in its round, as a rank runs its samples of a
// layer back to back: the second run prices every further sample (ResNet-50's weights, up
// to 9 MB a layer, are then in the cache). Alone a layer finds its code, page tables and
// caches as it left them; after its neighbours it does not: on an Intel Xeon VM
// MobileNetV2's layers took 1.2-1.8x longer in the runner than alone (25.4 ms priced, 35-39
// ms run at 1 rank); in context they took what the runner took.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cost/cost_model.hpp"
#include "mapping/layer_cost.hpp"

namespace orchid::mapping {

struct MeasuredCpuCostStats {
  std::size_t measured = 0;         // distinct subgraphs timed
  int context_rounds = 0;           // rounds of measure_in_context (0: costs are times alone)
  std::size_t runner_programs = 0;  // layers those rounds ran as the plan runner runs them
  // Over the subgraphs timed in context: the sum of their times in context and alone (one
  // sample each), whose ratio says how much context costs on this machine.
  double context_sum_s = 0, alone_sum_s = 0;
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
  // Times the layers measured so far in context (see above): at least 5 rounds, more (at
  // most 25, or more until 50 ms) until they have taken `context_seconds`. A subgraph that fails to
  // run keeps its time alone. Callers price again afterwards. With `model` (the graph the
  // workload was extracted from), each layer runs as the plan runner runs it
  // (layer_program: its own nodes, the layout ops after it included), else as rebuilt by
  // layer_subgraph.
  void measure_in_context(const Graph* model = nullptr, double context_seconds = 2.0);
  MeasuredCpuCostStats stats() const;

 private:
  double measure(const Layer& layer, const Design& design, std::string& why) const;
  struct Measured {
    Layer layer;  // one sample
    Design design;
    double seconds = 0;  // one sample
    // Each further sample when a rank runs several back to back, as the runner does (they
    // find the layer's weights in the cache); measured in context, else `seconds`.
    double next_seconds = 0;
    double cost(double samples) const { return seconds + (samples - 1) * next_seconds; }
    bool fallback = false;
  };
  // The layers asked for, in the order first asked (the evaluator asks layer by layer, in
  // the workload's order), each with the memo keys of its variants (whole, and its shards
  // by strategy and group size).
  struct Occurrence {
    Layer layer;  // as first asked for (its nodes in the model)
    std::vector<std::string> keys;
  };
  void note_occurrence(const Layer& layer, const std::string& key) const;

  const CostModel& cpu_model_;
  const LayerCostProvider& others_;
  std::size_t evict_bytes_;
  double target_seconds_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, Measured> memo_;
  mutable std::vector<Occurrence> occurrences_;
  mutable std::map<std::string, std::size_t> occurrence_of_;
  mutable MeasuredCpuCostStats stats_;
};

}  // namespace orchid::mapping
