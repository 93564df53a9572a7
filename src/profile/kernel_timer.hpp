// Times one candidate kernel on this CPU, through the real plan executor, so a measured
// time is what the kernel costs inside an executed plan (oneDNN post-op fusion,
// reference fallbacks, copies in and out of scratch, per-kernel dispatch).
//
// The kernel becomes a standalone one-kernel graph: its runtime inputs are graph inputs
// filled with deterministic random values (valid Gather indices, see random_inputs.hpp),
// its constants are shared with the source graph, its outputs are graph outputs. One
// PlanExecutor runs a one-kernel plan of it (build_plan): warm-up runs, then repetitions
// until `target_seconds` of timed runs have passed (at least `min_reps`, at most
// `max_reps`); the result is the median with p10/p90. Weights are flushed from the caches
// before each timed run (see flush_weights).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "fission/kernel_view.hpp"
#include "ir/graph.hpp"
#include "orchestrate/plan.hpp"

namespace orchid {

// Bump when the timing methodology (or the executor's way of running a kernel) changes
// so much that stored measurements should be taken again.
// 2: weights flushed from the caches before each run; 3: boundary tensors NHWC where
// the kernel's neighbours are convolutions (channels_last_boundaries), as in a model.
// 4: Concat and spatial means (ReduceMean over H, W) on oneDNN in the convolutions' layout.
// 5: a first per-channel constant Add runs as the primitive's bias, not a binary post-op; a
// Concat of parts of one tensor joins a fused loop; a plain Concat runs as block copies.
// 6: fused loops compute Tanh vectorised and Pow by 2 or 3 as products (GPT-2's GELU:
// 30x and 20x faster than the library calls per element); 7: tanh-GELU as a oneDNN post-op,
// also past a Reshape after a MatMul; 8: constant MatMul weights that oneDNN reads plain
// (its gemm, on AVX2) with rows padded off the cache-set stride (FFN products up to 2x faster);
// 9: loops that reduce over large channels-last or blocked tensors read plain copies;
// 10: loops write results straight to their outputs, their AVX2 code uses FMA (x86-64-v3),
// and no residual sum post-op lands on oneDNN's reference convolution; 11: strided dense
// convolutions on AVX2 in oneDNN's blocked layout (2-2.5x faster than on NHWC).
// The layout rule itself is not versioned here: the executor, the timer and the kernel
// signature share it (cost/layout_policy.hpp), and the signature records its answer.
constexpr int kKernelTimerVersion = 11;

struct KernelTimerOptions {
  int warmup_runs = 1;           // untimed runs first (page faults, oneDNN JIT)
  int min_reps = 3;              // timed runs at least ...
  int max_reps = 50;             // ... and at most
  double target_seconds = 0.02;  // stop once this much time was spent in timed runs
  std::uint64_t seed = 0;        // random input values
  // Evict the kernel's constant inputs (weights) from the CPU caches before each timed
  // run (not timed itself): in a whole model, weights are read once per inference and
  // rarely still cached (BERT-base has 417 MB of them), while a kernel repeated alone
  // would find them in L2/L3. Activations stay warm, as they are when the previous
  // kernel has just written them. x86 only (clflush); elsewhere a no-op.
  bool flush_weights = true;
};

struct KernelTiming {
  bool ok = false;
  std::string error;  // why it could not be timed (ok == false)
  double median_us = 0;
  double p10_us = 0;
  double p90_us = 0;
  double min_us = 0;
  double cv = 0;  // coefficient of variation of the timed runs
  int reps = 0;
};

// The kernel as a graph of its own (see above). Throws orchid::Error when a tensor lacks a
// type.
Graph kernel_graph(const KernelView& kernel);

// Never throws for a kernel the executor cannot run: ok = false with the reason.
KernelTiming time_kernel(const KernelView& kernel, const KernelTimerOptions& options = {});

// Shared by the CPU and CUDA timers. The plan running all of kernel_graph's nodes as one
// kernel; orchid::Error naming `timer` when it cannot be scheduled.
Plan one_kernel_plan(const Graph& kernel_graph, const std::string& timer);
// The timing loop: `timed_run_us` runs the kernel once and returns the microseconds it
// measured; repeated until options.target_seconds of measured time (min_reps..max_reps
// runs), then the statistics. Warm-up runs are the caller's.
KernelTiming repeat_timed_runs(const KernelTimerOptions& options,
                               const std::function<double()>& timed_run_us);

}  // namespace orchid
