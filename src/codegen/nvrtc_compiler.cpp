// NVRTC: generated CUDA source to a cubin for one architecture, no GPU needed.
#include <nvrtc.h>

#include <fmt/format.h>

#include "codegen/cuda_backend.hpp"
#include "util/error.hpp"

namespace orchid::codegen {

bool cuda_built() {
  return true;
}

NvrtcResult nvrtc_compile(const std::string& source, int arch) {
  NvrtcResult result;
  nvrtcProgram prog = nullptr;
  if (nvrtcCreateProgram(&prog, source.c_str(), "orchid_plan.cu", 0, nullptr, nullptr) !=
      NVRTC_SUCCESS) {
    fail("NVRTC: cannot create a program");
  }
  const std::string gpu = fmt::format("--gpu-architecture=sm_{}", arch);
  const char* options[] = {gpu.c_str(), "--std=c++17", "-default-device"};
  const nvrtcResult status = nvrtcCompileProgram(prog, 3, options);
  std::size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  result.log.resize(log_size);
  if (log_size > 0) nvrtcGetProgramLog(prog, result.log.data());
  while (!result.log.empty() && (result.log.back() == '\0' || result.log.back() == '\n')) {
    result.log.pop_back();
  }
  result.ok = status == NVRTC_SUCCESS;
  if (result.ok) {
    std::size_t size = 0;
    nvrtcGetCUBINSize(prog, &size);
    result.cubin.resize(size);
    nvrtcGetCUBIN(prog, result.cubin.data());
  }
  nvrtcDestroyProgram(&prog);
  return result;
}

}  // namespace orchid::codegen
