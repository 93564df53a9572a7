#include "profile/cuda_kernel_timer.hpp"

#include <algorithm>

#include "codegen/cuda_backend.hpp"
#include "codegen/plan_codegen.hpp"
#include "eval/random_inputs.hpp"
#include "util/error.hpp"

namespace orchid {

std::string require_cuda_timer(const std::string& what) {
  std::string why;
  const auto gpu = codegen::detect_cuda_gpu(&why);
  if (!gpu) fail("{} on --device cuda times kernels on an NVIDIA GPU, but {}", what, why);
  return gpu->name;
}

KernelTiming time_kernel_cuda(const KernelView& kernel, const KernelTimerOptions& options) {
  try {
    const Graph g = kernel_graph(kernel);
    const codegen::DeviceProgram program = codegen::generate_device_program(
        g, one_kernel_plan(g, "CUDA kernel timer"), {}, codegen::Target::Cuda);
    codegen::CudaExecutor executor(program);
    // Inputs copied once; each timed run is one graph replay between two CUDA events.
    executor.execute(make_random_inputs(g, options.seed));
    for (int r = 1; r < std::max(1, options.warmup_runs); ++r) executor.time_graph_ms();
    return repeat_timed_runs(options, [&] { return executor.time_graph_ms() * 1e3; });
  } catch (const std::exception& e) {
    KernelTiming timing;
    timing.error = e.what();
    return timing;
  }
}

}  // namespace orchid
