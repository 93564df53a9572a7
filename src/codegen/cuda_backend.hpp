// The CUDA side of the GPU backend. NVRTC compiles generated CUDA to a cubin without a
// GPU (compile checks run everywhere the toolkit is); the executor loads the CUDA
// driver (libcuda.so.1) at run time, so orchid starts on machines without one and
// `--device cuda` then says why it cannot run.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/device_program.hpp"
#include "eval/reference_interpreter.hpp"

namespace orchid::codegen {

// True when orchid was built with the CUDA toolkit (NVRTC and the CUDA runtime path).
bool cuda_built();

struct NvrtcResult {
  bool ok = false;
  std::string log;
  std::vector<char> cubin;
};
// Compiles `source` for sm_<arch> (80, 90, ...) to a cubin. An orchid::Error when orchid
// was built without CUDA.
NvrtcResult nvrtc_compile(const std::string& source, int arch);
// nvrtc_compile through a cubin cache ($XDG_CACHE_HOME/orchid/nvrtc or ~/.cache/orchid/
// nvrtc), keyed by the source, the architecture and NVRTC's version: a plan compiled once
// (by `run`, the CUDA kernel timer or the check script) is not compiled again.
NvrtcResult nvrtc_compile_cached(const std::string& source, int arch);

struct CudaGpu {
  std::string name;  // e.g. "NVIDIA H200"
  int arch = 0;      // compute capability major * 10 + minor
  std::int64_t memory_bytes = 0;
};
// The first CUDA GPU, or nullopt with `why` (no driver, no device, built without CUDA).
std::optional<CudaGpu> detect_cuda_gpu(std::string* why);

// The device spec (configs/devices/<name>.toml) that describes `gpu_name`, matched by
// the model number in the name (A100, H100, H200, V100); nullopt when none does.
std::optional<std::string> device_model_for_gpu(const std::string& gpu_name);

// Runs a DeviceProgram generated for Target::Cuda: NVRTC at construction for the
// present GPU's architecture, one device arena at the plan's offsets, weights uploaded
// once, the whole launch sequence captured once in a CUDA graph and replayed per run.
class CudaExecutor {
 public:
  explicit CudaExecutor(const DeviceProgram& program);
  ~CudaExecutor();
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  void execute(const TensorMap& inputs);
  TensorMap outputs() const;
  // Milliseconds of one graph replay, measured with CUDA events (inputs already copied).
  double time_graph_ms();
  // execute() launch by launch: microseconds per plan kernel (CUDA events).
  std::vector<double> execute_timed(const TensorMap& inputs);
  std::string device_name() const;
  // "linear backend auto: 12 cuBLASLt, 3 cuDNN, 5 generated".
  std::string linear_summary() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orchid::codegen
