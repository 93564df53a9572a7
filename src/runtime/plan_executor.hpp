// The CPU plan executor: runs an orchestration Plan kernel by kernel in plan order.
//
// Activations that cross kernels live in one preallocated arena laid out by the plan's
// offsets; weights and graph inputs are read in place. Each kernel is compiled once into
// stages: a linear primitive (MatMul, 2-D Conv) on oneDNN with the elementwise epilogue
// that follows it folded in as post-ops; a fused loop (runtime/fused/fused_loop.hpp) for
// each run of memory-bound primitives — elementwise, trailing-axis reductions, data
// movement — computed row by row in per-thread buffers; and, for what neither covers
// (pooling, Pad, Resize, Concat, ConvTranspose…), the reference kernel writing in place.
// A tensor passed between two stages of one kernel (a linear op's prologue result, say)
// lives in one scratch pool shared by all kernels. Nothing is allocated by execute().
//
// The parts, one file each under runtime/: memory_plan (where tensors live, pools),
// stage_builder (a kernel cut into stages, stage.hpp), epilogue_matcher (elementwise
// chains as oneDNN post-ops), linear_layouts (which tensors stay channels-last, asking
// cost/layout_policy), onednn_linear and onednn_memory_bound (the oneDNN primitives),
// fused/ (fused loops). This file only runs the stages.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "eval/reference_interpreter.hpp"
#include "ir/graph.hpp"
#include "orchestrate/plan.hpp"
#include "runtime/packed_weights.hpp"
#include "runtime/shared_memory.hpp"

namespace orchid {

struct PlanExecutorStats {
  std::size_t kernels = 0;
  std::size_t fused_linear_kernels = 0;   // the whole kernel is one oneDNN primitive
  std::size_t single_loop_kernels = 0;    // the whole kernel is one fused loop
  std::size_t dnnl_primitives = 0;        // linear primitives run on oneDNN
  std::size_t epilogue_primitives = 0;    // folded into a oneDNN primitive as post-ops
  std::size_t fused_loops = 0;            // fused loops over memory-bound primitives
  std::size_t fused_loop_primitives = 0;  // primitives those loops compute
  std::size_t reference_primitives = 0;   // primitives run with the reference kernels
  std::int64_t arena_bytes = 0;
  std::size_t summed_residuals = 0;     // convolutions adding a residual in place (sum post-op)
  std::int64_t scratch_bytes = 0;       // intermediates between a kernel's stages (one pool)
  std::int64_t loop_scratch_bytes = 0;  // fused loops' row buffers and index tables
  std::int64_t loop_buffer_bytes = 0;   // of which the row buffers (one pool)
  std::int64_t weight_bytes = 0;
  std::size_t blocked_convolutions = 0;    // run in the layout oneDNN prefers (e.g. NHWC)
  std::size_t nhwc_handoffs = 0;           // convolution sources kept in its layout, no reorder
  std::int64_t layout_bytes = 0;           // their blocked source/result copies (one pool)
  std::int64_t packed_weight_bytes = 0;    // weights reordered once into oneDNN's layout
  std::int64_t released_weight_bytes = 0;  // originals read only packed, handed back (release)
  std::size_t stored_layout_loops = 0;     // fused loops reading or writing such layouts in place
  std::size_t plain_copy_loops = 0;        // fused loops reading or writing plain copies of them

  std::size_t int8_primitives = 0;          // QLinearConv/QLinearMatMul on oneDNN's int8 kernels
  std::vector<std::string> int8_fallbacks;  // those on their reference kernel, and why
  std::int64_t peak_bytes() const {
    return arena_bytes + scratch_bytes + loop_scratch_bytes + weight_bytes - released_weight_bytes +
           layout_bytes + packed_weight_bytes;
  }
};

struct PlanExecutorOptions {
  // Graph inputs and outputs (of a one-kernel graph) that its neighbours in a model use
  // channels-last: inputs written NHWC by a convolution outside, outputs read NHWC there.
  // The executor keeps them NHWC where its own stages allow (cost/layout_policy.hpp;
  // outputs() then returns their bytes as stored): for timing a kernel as it runs inside
  // a model (channels_last_boundaries).
  std::set<std::string> boundary_nhwc;
  // Shared with other executors of the same graph built meanwhile (plan selection's
  // candidates), so each weight is packed once; null: the executor packs its own.
  PackedWeights* packing = nullptr;
  // Shared with other executors that run one after another, never at once (plan
  // selection's candidates): their arenas and pools in one block of the largest one's
  // size. An executor's outputs() are then its last run's only until another one runs.
  // Null: the executor allocates its own.
  std::shared_ptr<SharedExecutorMemory> memory;
  // Called with each weight the executor reads only packed, as soon as it is packed: the
  // owner of the graph may drop the original (Graph::release_constant). Unset: the names
  // are kept for release_packed_weights().
  std::function<void(const std::string& weight)> release_weight;
};

class PlanExecutor {
 public:
  // `graph` is the primitive graph the plan indexes into (Orchestration::fission.graph),
  // `alternatives` the fission's alternative map. Both must outlive the executor.
  PlanExecutor(const Graph& graph, const Plan& plan,
               const std::map<std::string, std::string>& alternatives,
               const PlanExecutorOptions& options = {});
  ~PlanExecutor();
  PlanExecutor(const PlanExecutor&) = delete;
  PlanExecutor& operator=(const PlanExecutor&) = delete;

  // Calls `release` with each weight this executor reads only packed (none when
  // PlanExecutorOptions::release_weight was set: those were passed to it already).
  void release_packed_weights(const std::function<void(const std::string& weight)>& release);

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

  // execute(), timing each kernel: microseconds per plan kernel, in plan order.
  std::vector<double> execute_timed(const TensorMap& inputs);
  // One line on how kernel `k` runs: its ops and its stages, e.g.
  // "Conv+Add+Clip: onednn brgconv_1x1:avx512_core".
  std::string describe_kernel(std::size_t k) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orchid
