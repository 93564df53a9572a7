// Executes a mapping plan across MPI ranks (`mpirun -n K orchid run MODEL --mapping P`).
// Rank r belongs to the plan group whose device range holds r; the group's first rank is
// its leader, and the group's ranks share a communicator for its collectives. Every layer
// runs on its group in topological order, per inference of the stream and per sample of
// the batch (the model is a batch-1 graph; `batch` samples are independent inferences,
// as `orchid map --batch` costs them):
//  - none: the leader runs the layer;
//  - batch: every tensor the layer reads is scattered by blocks of samples
//    (MPI_Iscatterv), each member runs the layer on its samples, the results are
//    gathered back (MPI_Igatherv); a batch smaller than the group gives the first members
//    a sample each, and the others take no part (they wait for the end if nothing else
//    needs them);
//  - out-channel, in-channel (all-reduce / reduce-scatter), spatial: the layer's linear op
//    is split (op_shards.hpp); the leader broadcasts the activation (MPI_Ibcast, out-
//    channel) or scatters its blocks (MPI_Iscatterv: channel blocks, or row blocks with
//    their halo rows for spatial), every member runs its part on the executor, the leader
//    gathers the blocks (MPI_Igatherv) and runs the rest of the layer (its epilogue).
//    In-channel all-reduce: the partials are summed by MPI_Iallreduce, so every member
//    holds the sum; each runs the epilogue too when all its inputs are on every member,
//    and a later split layer of the group whose input is on every member takes its block
//    locally (no broadcast or scatter). In-channel reduce-scatter: MPI_Ireduce_scatter
//    sums block m of the partials on member m, then the leader gathers the blocks;
//  - spatial chains: when a spatially split convolution's elementwise epilogue can run
//    on row blocks and its result is read only by the next spatially split convolution
//    of the group, every member keeps its rows, and the next layer's members fetch the
//    halo rows they lack from the neighbours that hold them (MPI_Isend/MPI_Irecv on the
//    group's communicator), without the leader;
//  - a sharded layer whose linear op cannot be split: run by the leader as "none" (the
//    timeline says so).
// Tensors that cross groups go leader to leader as non-blocking messages, sent as soon as
// their layer is done, so the next inference's work overlaps them. Every wait is
// bounded: a rank that fails or stalls makes the others stop with an error.
// Layer work (whole layers, parts and epilogues, each a subgraph orchestrated once) runs
// on the CPU plan executor (RunSettings::cpu_model; outputs then agree with the reference
// interpreter within float tolerance) or on the reference interpreter (bit-identical
// except after in-channel sums, float addition order).
#pragma once

#include <string>
#include <vector>

#include "cost/cost_model.hpp"
#include "distributed/mapping_plan.hpp"
#include "distributed/mpi_session.hpp"
#include "eval/reference_interpreter.hpp"
#include "ir/graph.hpp"
#include "mapping/workload.hpp"
#include "util/error.hpp"

namespace orchid::distributed {

struct RunSettings {
  int batch = 1;   // samples per inference
  int stream = 1;  // inferences pipelined through the groups
  // Rounds of `stream` inferences, the ranks synchronised between rounds: untimed ones
  // first, at least `warmup` of them and more until they have taken `warmup_s` (at most
  // 10,000), then `repeat` timed ones. The first inferences through a plan run up to 2x
  // slower than later ones (cold code, caches and allocator; on 2 cores a 20 us plan of
  // 4 ranks needed ~0.1 s to settle).
  int warmup = 1;
  double warmup_s = 0.2;
  int repeat = 1;
  double timeout_s = 300;  // longest wait for any one message
  int threads = 1;         // OpenMP threads per rank
  // Run each layer (its nodes as a subgraph, or its part and epilogue when split) on the
  // fast CPU executor under the plan the kernel orchestrator picks with this model; null:
  // the reference interpreter. Subgraphs the executor refuses use the reference too.
  const CostModel* cpu_model = nullptr;
};

struct TimedEvent {
  int rank = 0;
  int layer = -1;
  int inference = 0;  // round * stream + the inference's place in its round's stream
  std::string kind;   // compute, send, recv, bcast, scatter, gather, reduce
  std::string how;    // the strategy as executed (compute) or the peer rank (transfers)
  double start_s = 0, end_s = 0;
  double bytes = 0;
  // A computation the plan expects to take 100 us or more: CPU time of the rank's thread
  // during it; others (transfers, short computations): -1, not read.
  double cpu_s = -1;
};

struct DistributedRun {
  // Rank 0 only: graph outputs per inference of the stream and sample (the last round's);
  // every rank's events of the timed rounds, times from the start of their round.
  std::vector<std::vector<TensorMap>> outputs;
  std::vector<TimedEvent> events;
  std::vector<double> latency_s;      // per timed inference: first start to last end
  std::vector<double> round_seconds;  // per timed round: its whole stream
  int warmup_rounds = 0;              // untimed rounds run before them
};

// An error every rank knows about (all ranks checked and agreed before any ran): each
// rank can report it and exit normally, no MPI_Abort needed.
class AgreedError : public Error {
 public:
  using Error::Error;
};

// The world against the plan: rank count, layer names, batch (orchid::Error if wrong).
void check_plan(const WorldInfo& world, const mapping::Workload& workload, const MappingPlan& plan,
                const RunSettings& settings);

// Checks the world against the plan (rank count, layer names of `workload`) on every
// rank with the same result, then runs. `inputs[i][b]` are inference i's sample b.
DistributedRun run_plan(const Graph& graph, const mapping::Workload& workload,
                        const MappingPlan& plan, const std::vector<std::vector<TensorMap>>& inputs,
                        const RunSettings& settings);

// The world's size and this rank (initialises MPI).
int world_rank();
int world_size();

}  // namespace orchid::distributed
