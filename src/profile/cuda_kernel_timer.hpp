// Times one candidate kernel on the present NVIDIA GPU, as orchid would run it there:
// the kernel becomes a one-kernel graph (kernel_graph) and plan, its device code is
// generated for the CUDA target (src/codegen) and compiled with NVRTC, and the CUDA
// executor replays its launch sequence as a CUDA graph, timed with CUDA events: warm-up
// runs, then repetitions until `target_seconds` of timed runs (at least `min_reps`, at
// most `max_reps`); the result is the median with p10/p90.
//
// `orchid run|orchestrate --device cuda --profile` plugs it into MeasuredCostModel, so
// the profile database and the calibration work on GPU measurements as on CPU ones.
#pragma once

#include <string>

#include "profile/kernel_timer.hpp"

namespace orchid {

// Bump when the CUDA timing methodology changes. Kept apart from kKernelTimerVersion:
// the profile database of a GPU holds only CUDA measurements.
constexpr int kCudaKernelTimerVersion = 1;

// Never throws for a kernel that cannot be generated or run: ok = false with the reason.
KernelTiming time_kernel_cuda(const KernelView& kernel, const KernelTimerOptions& options = {});

// The present GPU's name when one can time kernels; otherwise an orchid::Error saying
// why (no driver, no GPU, built without CUDA), naming `what` (e.g. "--profile").
std::string require_cuda_timer(const std::string& what);

}  // namespace orchid
