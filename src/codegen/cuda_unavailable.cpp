// Built without the CUDA toolkit: every CUDA entry point says so.
#include "codegen/cuda_backend.hpp"
#include "util/error.hpp"

namespace orchid::codegen {

namespace {
constexpr const char* kWhy =
    "orchid was built without the CUDA toolkit (configure with /usr/local/cuda present and "
    "ORCHID_CUDA=ON)";
}

bool cuda_built() {
  return false;
}

NvrtcResult nvrtc_compile(const std::string&, int) {
  unsupported("{}", kWhy);
}
NvrtcResult nvrtc_compile_cached(const std::string&, int) {
  unsupported("{}", kWhy);
}

std::optional<CudaGpu> detect_cuda_gpu(std::string* why) {
  if (why) *why = kWhy;
  return std::nullopt;
}

struct CudaExecutor::Impl {};

CudaExecutor::CudaExecutor(const DeviceProgram&) {
  unsupported("{}", kWhy);
}
CudaExecutor::~CudaExecutor() = default;
void CudaExecutor::execute(const TensorMap&) {}
TensorMap CudaExecutor::outputs() const {
  return {};
}
double CudaExecutor::time_graph_ms() {
  return 0;
}
std::vector<double> CudaExecutor::execute_timed(const TensorMap&) {
  return {};
}
std::string CudaExecutor::device_name() const {
  return {};
}
std::string CudaExecutor::linear_summary() const {
  return {};
}

}  // namespace orchid::codegen
