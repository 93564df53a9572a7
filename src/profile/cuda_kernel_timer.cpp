#include "profile/cuda_kernel_timer.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include "codegen/cuda_backend.hpp"
#include "codegen/plan_codegen.hpp"
#include "eval/random_inputs.hpp"
#include "orchestrate/candidates.hpp"
#include "orchestrate/plan.hpp"
#include "util/error.hpp"
#include "util/statistics.hpp"

namespace orchid {

std::string require_cuda_timer(const std::string& what) {
  std::string why;
  const auto gpu = codegen::detect_cuda_gpu(&why);
  if (!gpu) fail("{} on --device cuda times kernels on an NVIDIA GPU, but {}", what, why);
  return gpu->name;
}

KernelTiming time_kernel_cuda(const KernelView& kernel, const KernelTimerOptions& options) {
  KernelTiming timing;
  try {
    const Graph g = kernel_graph(kernel);
    const PrimitiveGraphIndex index(g, {});
    std::vector<std::size_t> all(g.nodes.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    const std::map<std::string, std::string> no_alternatives;
    const auto plan = build_plan(index, no_alternatives, {KernelChoice{all, 0.0}}, "profile");
    if (!plan) fail("CUDA kernel timer: the kernel cannot be scheduled");
    const codegen::DeviceProgram program =
        codegen::generate_device_program(g, *plan, no_alternatives, codegen::Target::Cuda);
    codegen::CudaExecutor executor(program);
    const TensorMap inputs = make_random_inputs(g, options.seed);
    // Inputs copied once; each timed run is one graph replay between two CUDA events.
    executor.execute(inputs);
    for (int r = 1; r < std::max(1, options.warmup_runs); ++r) executor.time_graph_ms();
    std::vector<double> times;
    double spent = 0;
    while (static_cast<int>(times.size()) < std::max(1, options.min_reps) ||
           (spent < options.target_seconds &&
            static_cast<int>(times.size()) < std::max(options.min_reps, options.max_reps))) {
      const double ms = executor.time_graph_ms();
      times.push_back(ms * 1e3);
      spent += ms / 1e3;
    }
    std::sort(times.begin(), times.end());
    timing.ok = true;
    timing.reps = static_cast<int>(times.size());
    timing.median_us = median(times);
    timing.p10_us = percentile_of_sorted(times, 0.1);
    timing.p90_us = percentile_of_sorted(times, 0.9);
    timing.min_us = times.front();
  } catch (const std::exception& e) {
    timing = KernelTiming{};
    timing.error = e.what();
  }
  return timing;
}

}  // namespace orchid
