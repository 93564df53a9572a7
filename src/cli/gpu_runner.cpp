#include "cli/gpu_runner.hpp"

#include <fmt/format.h>

#include <chrono>

#include "codegen/cuda_backend.hpp"
#include "codegen/opencl_executor.hpp"
#include "codegen/plan_codegen.hpp"
#include "codegen/vendor_linear.hpp"
#include "util/error.hpp"

namespace orchid::cli {

bool is_gpu_device(const std::string& device) {
  return device == "opencl" || device == "cuda";
}

std::string gpu_device_model(const std::string& device, const std::string& requested) {
  if (device == "opencl") return requested.empty() ? "a100" : requested;
  std::string why;
  const auto gpu = codegen::detect_cuda_gpu(&why);
  if (!gpu) unsupported("--device cuda: {}", why);
  if (!requested.empty()) return requested;
  const auto model = codegen::device_model_for_gpu(gpu->name);
  if (!model) {
    fail(
        "--device cuda: no device model describes the GPU '{}' (configs/devices has a100, h100, "
        "h200, v100); pass one with --device-model NAME or a TOML path",
        gpu->name);
  }
  return *model;
}

struct GpuPlanRunner::Impl {
  std::string device;
  codegen::DeviceProgram program;
  std::unique_ptr<codegen::OpenCLExecutor> opencl;
  std::unique_ptr<codegen::CudaExecutor> cuda;
};

GpuPlanRunner::GpuPlanRunner(const std::string& device, const Graph& primitives, const Plan& plan,
                             const std::map<std::string, std::string>& alternatives,
                             const std::string& linear_backend)
    : impl_(std::make_unique<Impl>()) {
  impl_->device = device;
  const codegen::Target target = device == "cuda" ? codegen::Target::Cuda : codegen::Target::OpenCL;
  codegen::CodegenOptions options;
  options.linear_backend = codegen::parse_linear_backend(linear_backend);
  if (target != codegen::Target::Cuda &&
      options.linear_backend != codegen::LinearBackend::Generated) {
    fail("--linear-backend {}: cuBLASLt/cuDNN run on --device cuda only", linear_backend);
  }
  impl_->program =
      codegen::generate_device_program(primitives, plan, alternatives, target, options);
  if (target == codegen::Target::Cuda) {
    impl_->cuda = std::make_unique<codegen::CudaExecutor>(impl_->program);
  } else {
    impl_->opencl = std::make_unique<codegen::OpenCLExecutor>(impl_->program);
  }
}

GpuPlanRunner::~GpuPlanRunner() = default;

void GpuPlanRunner::execute(const TensorMap& inputs) {
  if (impl_->cuda) {
    impl_->cuda->execute(inputs);
  } else {
    impl_->opencl->execute(inputs);
  }
}

double GpuPlanRunner::timed_run(const TensorMap& inputs) {
  if (impl_->cuda) {
    impl_->cuda->execute(inputs);  // copies the inputs; the replay below is what is timed
    return impl_->cuda->time_graph_ms();
  }
  const auto start = std::chrono::steady_clock::now();
  impl_->opencl->execute(inputs);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

TensorMap GpuPlanRunner::outputs() const {
  return impl_->cuda ? impl_->cuda->outputs() : impl_->opencl->outputs();
}

std::vector<double> GpuPlanRunner::execute_timed(const TensorMap& inputs) {
  return impl_->cuda ? impl_->cuda->execute_timed(inputs) : impl_->opencl->execute_timed(inputs);
}

std::string GpuPlanRunner::describe_kernel(std::size_t k) const {
  std::string out;
  for (const auto& l : impl_->program.launches) {
    if (l.plan_kernel != k) continue;
    out += fmt::format("{}{} ({}, {} blocks)", out.empty() ? "" : " | ", l.ops, l.family, l.groups);
  }
  return out;
}

std::string GpuPlanRunner::summary() const {
  std::map<std::string, int> families;
  for (const auto& l : impl_->program.launches) ++families[l.family];
  std::string hist;
  for (const auto& [f, n] : families)
    hist += fmt::format("{}{} {}", hist.empty() ? "" : ", ", f, n);
  const std::string name = impl_->cuda ? impl_->cuda->device_name() : impl_->opencl->device_name();
  int vector = 0;
  for (const auto& l : impl_->program.launches) vector += l.vector_width > 1 ? 1 : 0;
  std::string out = fmt::format(
      "{} on {}: {} plan kernels as {} device kernels ({}; {} with float4 access)", impl_->device,
      name, impl_->program.plan_kernels, impl_->program.launches.size(), hist, vector);
  if (impl_->cuda) out += "; " + impl_->cuda->linear_summary();
  return out;
}

}  // namespace orchid::cli
