// What a layer costs on a CPU cluster (MPI ranks running the CPU executor) as the plan
// runner (src/distributed/plan_runner.hpp) executes it, beside the measured compute:
//  - which sharded layers the runner really splits (the others its group leader runs
//    whole, so they cost what "none" costs);
//  - the group's messages per layer: batch: a scatter of the layer's inputs and a
//    gather of its outputs by blocks of samples, where the chain of batch layers they
//    belong to begins and ends; out-channel: per sample a broadcast of
//    the input and a gather of the output blocks; in-channel: per sample a scatter of the
//    input's channel blocks and a sum (reduce) of full-size partials at the leader;
//    spatial: per sample a scatter of row blocks (halo rows included) and a gather.
//    Each message costs latency + bytes / bandwidth (the point-to-point fit of
//    `orchid calibrate-net`); a root sends or receives its p - 1 blocks one after the
//    other, a broadcast or reduce takes ceil(log2 p) rounds;
//  - the runner's own time per layer (calibrated), on top of the measured computation;
//  - oversubscription: ranks that share fewer cores than they have threads run slower
//    by threads / cores while they all compute.
#pragma once

#include <utility>
#include <vector>

#include "mapping/sharding.hpp"
#include "mapping/workload.hpp"

namespace orchid::mapping {

struct CpuNetwork {
  double latency_s = 0;  // per message
  double gbs = 1;        // bytes per ns: [network.runner] gbs if measured, else [network.p2p]
  int cores = 0;         // cores the ranks share; 0: each thread has its own
  // The plan runner's own time per layer a rank runs, beside the layer's computation
  // ([network.runner] step_us from `orchid calibrate-net`; 0 without it).
  double step_s = 0;
  // Its fixed time per split layer (channels or rows) and sample beyond the messages'
  // latencies ([network.runner] split_us; 0 without it): what makes splitting a layer of
  // microseconds a loss.
  double split_s = 0;
};

// Whether the runner splits `layer` by `s` over p > 1 ranks (batch: always).
bool cpu_runner_splits(const Layer& layer, Strategy s, int p);

// Seconds of group messages the runner spends on one layer (all samples), 0 for p = 1.
double cpu_layer_comm_seconds(const Layer& layer, Strategy s, int p, const CpuNetwork& net);

// A batch layer's messages: the scatter of its inputs' sample blocks (`scatter`) and the
// gather of its results (`gather`); within a chain of batch layers of one group the
// samples stay on the ranks, so only a chain's ends pay them.
double cpu_batch_comm_seconds(const Layer& layer, int p, const CpuNetwork& net, bool scatter,
                              bool gather);

// A spatially split layer's messages: its input's row blocks scattered (`scatter`), or
// inside a chain of spatially split convolutions only the halo rows exchanged between
// neighbours, and its result's row blocks gathered (`gather`) unless the chain goes on.
double cpu_spatial_comm_seconds(const Layer& layer, int p, const CpuNetwork& net, bool scatter,
                                bool gather);

// Slow-down of compute when `busy_threads` threads run on the cluster's shared cores.
double cpu_oversubscription(int busy_threads, const CpuNetwork& net);

// Ranks that compute while the runner runs `layer` split by `s` over p ranks: 1 when it
// does not split it, at most the batch for batch splits (the others have no samples).
int cpu_busy_ranks(const Layer& layer, Strategy s, int p);

// Groups of ranks that share `cores` cores, each running its layers in order: a layer
// starts when its group is free and its inputs have arrived (`ready_after`: per
// predecessor, the delay after its finish), computes `work` seconds of one-core-per-thread
// time with `threads` busy threads, then spends `fixed` seconds on messages (no core).
// While layers of several groups compute at once and their threads exceed the cores, all
// of them progress at cores / threads of their speed (the kernel shares the cores
// fairly). Returns each layer's start, end of compute and finish.
struct SharedCoreLayer {
  int group = 0;
  double work = 0, fixed = 0;
  int threads = 1;
  std::vector<std::pair<int, double>> ready_after;  // (predecessor, delay)
};
struct SharedCoreTimes {
  std::vector<double> start, computed, finish;
};
SharedCoreTimes simulate_shared_cores(const std::vector<SharedCoreLayer>& layers,
                                      const std::vector<std::vector<int>>& group_order, int cores);

}  // namespace orchid::mapping
