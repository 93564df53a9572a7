// The CUDA host runtime. The driver API is loaded with dlopen, so the binary does not
// depend on libcuda.so.1; symbol names come from cuda.h's own macros (the _v2 entry
// points), stringified after expansion.
#include <cuda.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "codegen/cuda_backend.hpp"
#include "codegen/cuda_vendor.hpp"
#include "util/error.hpp"

namespace orchid::codegen {

namespace {

#define ORCHID_STR2(x) #x
#define ORCHID_STR(x) ORCHID_STR2(x)

// The driver entry points orchid uses.
struct Driver {
  void* handle = nullptr;
#define ORCHID_CU(fn) decltype(&fn) fn##_p = nullptr;
// clang-format off
#define ORCHID_CU_LIST(X) \
  X(cuInit) \
  X(cuDeviceGet) \
  X(cuDeviceGetCount) \
  X(cuDeviceGetName) \
  X(cuDeviceGetAttribute) \
  X(cuDeviceTotalMem) \
  X(cuDevicePrimaryCtxRetain) \
  X(cuDevicePrimaryCtxRelease) \
  X(cuCtxSetCurrent) \
  X(cuCtxSynchronize) \
  X(cuModuleLoadData) \
  X(cuModuleUnload) \
  X(cuModuleGetFunction) \
  X(cuMemAlloc) \
  X(cuMemFree) \
  X(cuMemcpyHtoD) \
  X(cuMemcpyHtoDAsync) \
  X(cuMemcpyDtoH) \
  X(cuMemsetD8) \
  X(cuStreamCreate) \
  X(cuStreamDestroy) \
  X(cuStreamSynchronize) \
  X(cuStreamBeginCapture) \
  X(cuStreamEndCapture) \
  X(cuGraphInstantiate) \
  X(cuGraphLaunch) \
  X(cuGraphExecDestroy) \
  X(cuGraphDestroy) \
  X(cuEventCreate) \
  X(cuEventDestroy) \
  X(cuEventRecord) \
  X(cuEventSynchronize) \
  X(cuEventElapsedTime) \
  X(cuLaunchKernel) \
  X(cuGetErrorString)
  // clang-format on
  ORCHID_CU_LIST(ORCHID_CU)
#undef ORCHID_CU
  std::string error;

  Driver() {
    handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      error = "the NVIDIA driver (libcuda.so.1) is not installed";
      return;
    }
#define ORCHID_CU(fn)                                                      \
  fn##_p = reinterpret_cast<decltype(&fn)>(dlsym(handle, ORCHID_STR(fn))); \
  if (!fn##_p && error.empty()) error = "libcuda.so.1 lacks " ORCHID_STR(fn);
    ORCHID_CU_LIST(ORCHID_CU)
#undef ORCHID_CU
    if (error.empty() && cuInit_p(0) != CUDA_SUCCESS) error = "cuInit failed: no usable CUDA GPU";
  }
  bool ok() const {
    return error.empty();
  }
};

Driver& driver() {
  static Driver d;
  return d;
}

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* text = nullptr;
  if (driver().cuGetErrorString_p) driver().cuGetErrorString_p(r, &text);
  fail("CUDA: {} failed: {}", what, text ? text : std::to_string(static_cast<int>(r)));
}

}  // namespace

std::optional<CudaGpu> detect_cuda_gpu(std::string* why) {
  Driver& d = driver();
  if (!d.ok()) {
    if (why) *why = d.error;
    return std::nullopt;
  }
  int count = 0;
  if (d.cuDeviceGetCount_p(&count) != CUDA_SUCCESS || count == 0) {
    if (why) *why = "the CUDA driver reports no GPU";
    return std::nullopt;
  }
  CUdevice dev;
  check(d.cuDeviceGet_p(&dev, 0), "cuDeviceGet");
  CudaGpu gpu;
  char name[256] = {};
  check(d.cuDeviceGetName_p(name, sizeof(name) - 1, dev), "cuDeviceGetName");
  gpu.name = name;
  int major = 0, minor = 0;
  check(d.cuDeviceGetAttribute_p(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
        "cuDeviceGetAttribute");
  check(d.cuDeviceGetAttribute_p(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
        "cuDeviceGetAttribute");
  gpu.arch = major * 10 + minor;
  std::size_t mem = 0;
  check(d.cuDeviceTotalMem_p(&mem, dev), "cuDeviceTotalMem");
  gpu.memory_bytes = static_cast<std::int64_t>(mem);
  return gpu;
}

struct CudaExecutor::Impl {
  const DeviceProgram& program;
  Driver& d = driver();
  CudaGpu gpu;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  std::vector<CUfunction> functions;
  CUdeviceptr arena = 0, scratch = 0, weights = 0, inputs = 0;
  CUstream stream = nullptr;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  CUevent start = nullptr, stop = nullptr;
  std::vector<char> staging;
  // Per launch: the library call that replaces the generated kernel, when one does.
  std::vector<std::unique_ptr<VendorOp>> vendor_ops;
  std::vector<CUdeviceptr> vendor_memory;
  std::string linear_note;  // why some linear stages stayed generated

  explicit Impl(const DeviceProgram& p) : program(p) {
    if (p.target != Target::Cuda) fail("CUDA: the program was generated for OpenCL");
    std::string why;
    auto found = detect_cuda_gpu(&why);
    if (!found) unsupported("--device cuda: {}", why);
    gpu = *found;
    check(d.cuDeviceGet_p(&device, 0), "cuDeviceGet");
    check(d.cuDevicePrimaryCtxRetain_p(&context, device), "cuDevicePrimaryCtxRetain");
    check(d.cuCtxSetCurrent_p(context), "cuCtxSetCurrent");
    const NvrtcResult compiled = nvrtc_compile_cached(p.source, gpu.arch);
    if (!compiled.ok) fail("NVRTC: the generated source does not compile:\n{}", compiled.log);
    check(d.cuModuleLoadData_p(&module, compiled.cubin.data()), "cuModuleLoadData");
    for (const Launch& l : p.launches) {
      CUfunction f;
      check(d.cuModuleGetFunction_p(&f, module, l.name.c_str()), "cuModuleGetFunction");
      functions.push_back(f);
    }
    arena = alloc(p.arena_bytes);
    scratch = alloc(p.scratch_bytes);
    weights = alloc(p.weights_bytes);
    inputs = alloc(p.inputs_bytes);
    for (const auto& c : p.constants) {
      check(d.cuMemcpyHtoD_p(weights + static_cast<CUdeviceptr>(c.offset), c.data->raw(),
                             c.data->nbytes()),
            "uploading constants");
    }
    // A pageable upload may still be in flight when cuMemcpyHtoD returns.
    check(d.cuCtxSynchronize_p(), "cuCtxSynchronize");
    staging.resize(static_cast<std::size_t>(p.inputs_bytes));
    check(d.cuStreamCreate_p(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check(d.cuEventCreate_p(&start, CU_EVENT_DEFAULT), "cuEventCreate");
    check(d.cuEventCreate_p(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
    choose_linear_backends();
    // The launch sequence, captured once.
    check(d.cuStreamBeginCapture_p(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture");
    for (std::size_t i = 0; i < functions.size(); ++i) launch(i);
    check(d.cuStreamEndCapture_p(stream, &graph), "cuStreamEndCapture");
    check(d.cuGraphInstantiate_p(&exec, graph, 0), "cuGraphInstantiate");
  }

  CUdeviceptr alloc(std::int64_t bytes) {
    CUdeviceptr ptr = 0;
    check(d.cuMemAlloc_p(&ptr, static_cast<std::size_t>(std::max<std::int64_t>(bytes, 256))),
          "cuMemAlloc");
    return ptr;
  }

  // Milliseconds of one run of launch i (median of 9, after one warm-up).
  double time_launch(std::size_t i) {
    std::vector<float> ms;
    launch(i);
    for (int r = 0; r < 9; ++r) {
      check(d.cuEventRecord_p(start, stream), "cuEventRecord");
      launch(i);
      check(d.cuEventRecord_p(stop, stream), "cuEventRecord");
      check(d.cuEventSynchronize_p(stop), "cuEventSynchronize");
      float t = 0;
      check(d.cuEventElapsedTime_p(&t, start, stop), "cuEventElapsedTime");
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  }

  // --linear-backend: vendor replaces every linear stage that maps to cuBLASLt/cuDNN
  // (an error when the library is missing); auto keeps the faster of the two per stage,
  // timed here on the GPU, and stays generated where a library is missing.
  void choose_linear_backends() {
    const LinearBackend backend = program.linear_backend;
    vendor_ops.resize(program.launches.size());
    if (backend == LinearBackend::Generated) return;
    VendorMemory memory;
    memory.alloc = [this](std::size_t bytes) {
      vendor_memory.push_back(alloc(static_cast<std::int64_t>(bytes)));
      return vendor_memory.back();
    };
    memory.upload = [this](CUdeviceptr dst, const void* src, std::size_t bytes) {
      check(d.cuMemcpyHtoD_p(dst, src, bytes), "uploading a vendor bias");
    };
    // Auto times on whatever the buffers hold: zeros, not uninitialised memory.
    const std::pair<CUdeviceptr, std::int64_t> buffers[] = {{arena, program.arena_bytes},
                                                            {scratch, program.scratch_bytes},
                                                            {inputs, program.inputs_bytes}};
    for (const auto& [m, bytes] : buffers) {
      check(d.cuMemsetD8_p(m, 0, static_cast<std::size_t>(std::max<std::int64_t>(bytes, 256))),
            "cuMemsetD8");
    }
    for (std::size_t i = 0; i < program.launches.size(); ++i) {
      const Launch& l = program.launches[i];
      if (l.vendor < 0) continue;
      const VendorCall& call = *program.vendor_calls.at(static_cast<std::size_t>(l.vendor));
      std::string why;
      std::unique_ptr<VendorOp> op = make_vendor_op(call, memory, &why);
      if (!op) {
        if (backend == LinearBackend::Vendor) {
          fail("--linear-backend vendor: {} needs {}", call.describe(), why);
        }
        linear_note = why;
        continue;
      }
      vendor_ops[i] = std::move(op);
      if (backend == LinearBackend::Auto) {
        std::unique_ptr<VendorOp> keep = std::move(vendor_ops[i]);
        const double generated_ms = time_launch(i);
        vendor_ops[i] = std::move(keep);
        const double vendor_ms = time_launch(i);
        if (vendor_ms >= generated_ms) vendor_ops[i].reset();
      }
    }
  }

  void launch(std::size_t i) {
    if (vendor_ops[i]) {
      vendor_ops[i]->enqueue({arena, scratch, weights, inputs}, stream);
      return;
    }
    void* args[] = {&arena, &weights, &scratch, &inputs};
    check(d.cuLaunchKernel_p(functions[i], static_cast<unsigned>(program.launches[i].groups), 1, 1,
                             256, 1, 1, 0, stream, args, nullptr),
          "cuLaunchKernel");
  }

  void upload(const TensorMap& feed) {
    for (const auto& in : program.inputs) {
      auto it = feed.find(in.name);
      if (it == feed.end()) fail("CUDA executor: input '{}' is missing", in.name);
      if (it->second.shape() != in.shape || it->second.dtype() != in.dtype) {
        fail("CUDA executor: input '{}' has the wrong dtype or shape", in.name);
      }
      std::memcpy(staging.data() + in.offset, it->second.raw(), it->second.nbytes());
    }
    if (!staging.empty()) {
      // On the executor's stream, so the kernels after it see the inputs.
      check(d.cuMemcpyHtoDAsync_p(inputs, staging.data(), staging.size(), stream),
            "uploading inputs");
    }
  }

  ~Impl() {
    vendor_ops.clear();
    for (CUdeviceptr m : vendor_memory) d.cuMemFree_p(m);
    if (exec) d.cuGraphExecDestroy_p(exec);
    if (graph) d.cuGraphDestroy_p(graph);
    if (start) d.cuEventDestroy_p(start);
    if (stop) d.cuEventDestroy_p(stop);
    if (stream) d.cuStreamDestroy_p(stream);
    for (CUdeviceptr m : {arena, scratch, weights, inputs}) {
      if (m) d.cuMemFree_p(m);
    }
    if (module) d.cuModuleUnload_p(module);
    if (context) d.cuDevicePrimaryCtxRelease_p(device);
  }
};

CudaExecutor::CudaExecutor(const DeviceProgram& program) : impl_(std::make_unique<Impl>(program)) {}

CudaExecutor::~CudaExecutor() = default;

void CudaExecutor::execute(const TensorMap& inputs) {
  impl_->upload(inputs);
  check(impl_->d.cuGraphLaunch_p(impl_->exec, impl_->stream), "cuGraphLaunch");
  check(impl_->d.cuStreamSynchronize_p(impl_->stream), "cuStreamSynchronize");
}

double CudaExecutor::time_graph_ms() {
  Impl& m = *impl_;
  check(m.d.cuEventRecord_p(m.start, m.stream), "cuEventRecord");
  check(m.d.cuGraphLaunch_p(m.exec, m.stream), "cuGraphLaunch");
  check(m.d.cuEventRecord_p(m.stop, m.stream), "cuEventRecord");
  check(m.d.cuEventSynchronize_p(m.stop), "cuEventSynchronize");
  float ms = 0;
  check(m.d.cuEventElapsedTime_p(&ms, m.start, m.stop), "cuEventElapsedTime");
  return ms;
}

std::vector<double> CudaExecutor::execute_timed(const TensorMap& inputs) {
  Impl& m = *impl_;
  m.upload(inputs);
  std::vector<double> us(m.program.plan_kernels, 0.0);
  std::size_t i = 0;
  for (std::size_t k = 0; k < us.size(); ++k) {
    check(m.d.cuEventRecord_p(m.start, m.stream), "cuEventRecord");
    for (; i < m.program.launches.size() && m.program.launches[i].plan_kernel == k; ++i) {
      m.launch(i);
    }
    check(m.d.cuEventRecord_p(m.stop, m.stream), "cuEventRecord");
    check(m.d.cuEventSynchronize_p(m.stop), "cuEventSynchronize");
    float ms = 0;
    check(m.d.cuEventElapsedTime_p(&ms, m.start, m.stop), "cuEventElapsedTime");
    us[k] = ms * 1e3;
  }
  return us;
}

TensorMap CudaExecutor::outputs() const {
  const Impl& m = *impl_;
  TensorMap out;
  for (const auto& o : m.program.outputs) {
    Tensor t(o.dtype, o.shape);
    const CUdeviceptr base = o.region == Region::Arena     ? m.arena
                             : o.region == Region::Weights ? m.weights
                             : o.region == Region::Inputs  ? m.inputs
                                                           : m.scratch;
    if (t.nbytes() > 0) {
      check(m.d.cuMemcpyDtoH_p(t.raw(), base + static_cast<CUdeviceptr>(o.offset), t.nbytes()),
            "reading outputs");
    }
    out[o.name] = std::move(t);
  }
  return out;
}

std::string CudaExecutor::device_name() const {
  return impl_->gpu.name;
}

std::string CudaExecutor::linear_summary() const {
  const Impl& m = *impl_;
  int lt = 0, dnn = 0, generated = 0;
  for (std::size_t i = 0; i < m.program.launches.size(); ++i) {
    const Launch& l = m.program.launches[i];
    if (l.family != "matmul" && l.family != "conv") continue;
    if (!m.vendor_ops[i]) {
      ++generated;
    } else if (m.program.vendor_calls[static_cast<std::size_t>(l.vendor)]->kind ==
               VendorCall::Kind::Gemm) {
      ++lt;
    } else {
      ++dnn;
    }
  }
  std::string out = fmt::format("linear backend {}: {} cuBLASLt, {} cuDNN, {} generated",
                                linear_backend_name(m.program.linear_backend), lt, dnn, generated);
  if (!m.linear_note.empty()) out += fmt::format(" (vendor libraries: {})", m.linear_note);
  return out;
}

}  // namespace orchid::codegen
