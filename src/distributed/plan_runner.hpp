// Executes a mapping plan across MPI ranks (`mpirun -n K orchid run MODEL --mapping P`).
// Rank r belongs to the plan group whose device range holds r; the group's first rank is
// its leader. Every layer runs on its group in topological order, per inference of the
// stream and per sample of the batch (the model is a batch-1 graph; `batch` samples are
// independent inferences, as `orchid map --batch` costs them):
//  - none: the leader runs the layer;
//  - batch: the leader sends each member the inputs of its block of samples, members
//    run the layer on them, the leader gathers the outputs;
//  - out-channel: members run the layer's linear op (Conv, Gemm, MatMul with a constant
//    weight) on their block of output channels; the leader concatenates the slices and
//    runs the layer's epilogue;
//  - in-channel (all-reduce / reduce-scatter): members run the linear op on their block
//    of input channels (bias on the first block only); the leader sums the partials in
//    rank order and runs the epilogue;
//  - spatial, or a sharded layer without such a linear op: run by the leader as "none"
//    (the timeline says so).
// Tensors that cross groups go leader to leader as non-blocking messages, sent as soon as
// their layer is done, so the next inference's work overlaps them. Every wait is
// bounded: a rank that fails or stalls makes the others stop with an error.
// Layer work runs on the CPU plan executor (RunSettings::cpu_model; outputs then agree
// with the reference interpreter within float tolerance) or on the reference kernels
// (eval/; bit-identical except after in-channel sums, float addition order).
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
  int batch = 1;           // samples per inference
  int stream = 1;          // inferences pipelined through the groups
  double timeout_s = 300;  // longest wait for any one message
  int threads = 1;         // OpenMP threads per rank
  // Run each layer (its nodes as a subgraph) on the fast CPU executor under the plan the
  // kernel orchestrator picks with this model; null: the reference kernels. Channel-
  // sharded linear ops and layers the executor refuses use the reference kernels.
  const CostModel* cpu_model = nullptr;
};

struct TimedEvent {
  int rank = 0;
  int layer = -1;
  int inference = 0;
  std::string kind;  // compute, send, recv, gather, scatter
  std::string how;   // the strategy as executed (compute) or the peer rank (transfers)
  double start_s = 0, end_s = 0;
  double bytes = 0;
};

struct DistributedRun {
  // Rank 0 only: graph outputs per inference and sample; every rank's events.
  std::vector<std::vector<TensorMap>> outputs;
  std::vector<TimedEvent> events;
  std::vector<double> latency_s;  // per inference: first start to last end over ranks
  double seconds = 0;             // whole run, all inferences
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
