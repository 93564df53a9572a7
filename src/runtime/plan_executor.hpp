// The CPU plan executor: runs an orchestration Plan kernel by kernel in plan order.
//
// Activations that cross kernels live in one preallocated arena laid out by the plan's
// offsets; weights are read in place from the graph; intermediates of a kernel live in
// that kernel's own scratch and never touch the arena. Linear primitives (MatMul, 2-D
// Conv) run on oneDNN; a kernel that is exactly one linear primitive followed by a chain
// of elementwise epilogues (bias / residual add, mul, relu, sigmoid, tanh, clip) becomes
// a single oneDNN primitive with post-ops and writes straight into the arena. Every
// other primitive runs with the reference kernels on the kernel's scratch.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "ir/graph.hpp"
#include "orchestrate/plan.hpp"
#include "runtime/reference_interpreter.hpp"

namespace orchid {

struct PlanExecutorStats {
  std::size_t kernels = 0;
  std::size_t fused_linear_kernels = 0;  // one oneDNN primitive with post-ops
  std::size_t dnnl_primitives = 0;       // linear primitives run on oneDNN
  std::size_t reference_primitives = 0;  // primitives run with the reference kernels
  std::int64_t arena_bytes = 0;
  std::int64_t scratch_bytes = 0;  // per-kernel scratch kept between runs, all kernels
  std::int64_t weight_bytes = 0;
  std::int64_t peak_bytes() const { return arena_bytes + scratch_bytes + weight_bytes; }
};

class PlanExecutor {
 public:
  // `graph` is the primitive graph the plan indexes into (Orchestration::fission.graph),
  // `alternatives` the fission's alternative map. Both must outlive the executor.
  PlanExecutor(const Graph& graph, const Plan& plan,
               const std::map<std::string, std::string>& alternatives);
  ~PlanExecutor();
  PlanExecutor(const PlanExecutor&) = delete;
  PlanExecutor& operator=(const PlanExecutor&) = delete;

  // Runs the plan; `inputs` must hold every graph input (read in place, not copied).
  void execute(const TensorMap& inputs);
  // The graph outputs of the last execute(), copied out of the arena.
  TensorMap outputs() const;
  // execute() then outputs().
  TensorMap run(const TensorMap& inputs) {
    execute(inputs);
    return outputs();
  }

  const PlanExecutorStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orchid
