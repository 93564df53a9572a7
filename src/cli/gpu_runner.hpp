// `orchid run --device opencl|cuda`: the plan runs as generated device code (src/codegen)
// on the first OpenCL device or on the present NVIDIA GPU.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "eval/reference_interpreter.hpp"
#include "ir/graph.hpp"
#include "orchestrate/plan.hpp"

namespace orchid::cli {

bool is_gpu_device(const std::string& device);

// The device spec to orchestrate for: `requested` (--device-model) when given; for cuda
// the spec matching the present GPU (an error naming the GPU when none matches, or why
// CUDA cannot run); for opencl "a100" (the plan a GPU would get; PoCL only checks it).
std::string gpu_device_model(const std::string& device, const std::string& requested);

class GpuPlanRunner {
 public:
  // `linear_backend`: generated, vendor or auto (cuBLASLt/cuDNN for linear stages; cuda
  // only, see codegen/vendor_linear.hpp).
  GpuPlanRunner(const std::string& device, const Graph& primitives, const Plan& plan,
                const std::map<std::string, std::string>& alternatives,
                const std::string& linear_backend = "generated");
  ~GpuPlanRunner();
  void execute(const TensorMap& inputs);
  // One timed run in milliseconds: wall clock (OpenCL) or a CUDA-event timed graph replay.
  double timed_run(const TensorMap& inputs);
  TensorMap outputs() const;
  std::vector<double> execute_timed(const TensorMap& inputs);
  std::string describe_kernel(std::size_t k) const;
  // "opencl on <device>: 42 plan kernels as 57 device kernels (map 30, ...)".
  std::string summary() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orchid::cli
