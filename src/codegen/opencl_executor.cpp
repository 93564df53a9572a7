#include "codegen/opencl_executor.hpp"

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <fmt/format.h>

#include <chrono>
#include <cstring>

#include "util/error.hpp"

namespace orchid::codegen {

namespace {

void check(cl_int status, const char* what) {
  if (status != CL_SUCCESS) fail("OpenCL: {} failed (error {})", what, status);
}

// The first device of the first platform that has one.
bool first_device(cl_platform_id* platform, cl_device_id* device, std::string* why) {
  cl_uint platforms = 0;
  if (clGetPlatformIDs(0, nullptr, &platforms) != CL_SUCCESS || platforms == 0) {
    if (why) *why = "no OpenCL platform is installed (Debian: pocl-opencl-icd)";
    return false;
  }
  std::vector<cl_platform_id> ids(platforms);
  clGetPlatformIDs(platforms, ids.data(), nullptr);
  for (cl_platform_id p : ids) {
    cl_uint n = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, device, &n) == CL_SUCCESS && n > 0) {
      *platform = p;
      return true;
    }
  }
  if (why) *why = "no OpenCL platform has a device";
  return false;
}

}  // namespace

struct OpenCLExecutor::Impl {
  const DeviceProgram& program;
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_program cl_prog = nullptr;
  std::vector<cl_kernel> kernels;
  cl_mem arena = nullptr, scratch = nullptr, weights = nullptr, inputs = nullptr;
  std::vector<char> staging;  // inputs, packed as the inputs buffer holds them

  explicit Impl(const DeviceProgram& p) : program(p) {
    if (p.target != Target::OpenCL) fail("OpenCL: the program was generated for CUDA");
    std::string why;
    if (!first_device(&platform, &device, &why)) fail("OpenCL: {}", why);
    cl_int status = CL_SUCCESS;
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status);
    check(status, "clCreateContext");
    queue = clCreateCommandQueueWithProperties(context, device, nullptr, &status);
    check(status, "clCreateCommandQueue");
    const char* text = p.source.c_str();
    const std::size_t length = p.source.size();
    cl_prog = clCreateProgramWithSource(context, 1, &text, &length, &status);
    check(status, "clCreateProgramWithSource");
    if (clBuildProgram(cl_prog, 1, &device, "", nullptr, nullptr) != CL_SUCCESS) {
      std::size_t size = 0;
      clGetProgramBuildInfo(cl_prog, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
      std::string log(size, '\0');
      clGetProgramBuildInfo(cl_prog, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
      if (log.size() > 4000) log.resize(4000);
      fail("OpenCL: the generated source does not compile:\n{}", log);
    }
    for (const Launch& l : p.launches) {
      kernels.push_back(clCreateKernel(cl_prog, l.name.c_str(), &status));
      check(status, "clCreateKernel");
    }
    arena = buffer(p.arena_bytes);
    scratch = buffer(p.scratch_bytes);
    weights = buffer(p.weights_bytes);
    inputs = buffer(p.inputs_bytes);
    for (const auto& c : p.constants) {
      check(clEnqueueWriteBuffer(queue, weights, CL_FALSE, static_cast<std::size_t>(c.offset),
                                 c.data->nbytes(), c.data->raw(), 0, nullptr, nullptr),
            "uploading constants");
    }
    check(clFinish(queue), "clFinish");
    for (cl_kernel k : kernels) {
      check(clSetKernelArg(k, 0, sizeof(cl_mem), &arena), "clSetKernelArg");
      check(clSetKernelArg(k, 1, sizeof(cl_mem), &weights), "clSetKernelArg");
      check(clSetKernelArg(k, 2, sizeof(cl_mem), &scratch), "clSetKernelArg");
      check(clSetKernelArg(k, 3, sizeof(cl_mem), &inputs), "clSetKernelArg");
    }
    staging.resize(static_cast<std::size_t>(p.inputs_bytes));
  }

  cl_mem buffer(std::int64_t bytes) {
    cl_int status = CL_SUCCESS;
    cl_mem m = clCreateBuffer(context, CL_MEM_READ_WRITE,
                              static_cast<std::size_t>(std::max<std::int64_t>(bytes, 64)), nullptr,
                              &status);
    check(status, "clCreateBuffer");
    return m;
  }

  ~Impl() {
    for (cl_kernel k : kernels) clReleaseKernel(k);
    for (cl_mem m : {arena, scratch, weights, inputs}) {
      if (m) clReleaseMemObject(m);
    }
    if (cl_prog) clReleaseProgram(cl_prog);
    if (queue) clReleaseCommandQueue(queue);
    if (context) clReleaseContext(context);
  }

  void upload(const TensorMap& feed) {
    for (const auto& in : program.inputs) {
      auto it = feed.find(in.name);
      if (it == feed.end()) fail("OpenCL executor: input '{}' is missing", in.name);
      if (it->second.shape() != in.shape || it->second.dtype() != in.dtype) {
        fail("OpenCL executor: input '{}' has the wrong dtype or shape", in.name);
      }
      std::memcpy(staging.data() + in.offset, it->second.raw(), it->second.nbytes());
    }
    if (!staging.empty()) {
      check(clEnqueueWriteBuffer(queue, inputs, CL_FALSE, 0, staging.size(), staging.data(), 0,
                                 nullptr, nullptr),
            "uploading inputs");
    }
  }

  void launch(std::size_t i) {
    const std::size_t local = 256;
    const std::size_t global = static_cast<std::size_t>(program.launches[i].groups) * local;
    check(
        clEnqueueNDRangeKernel(queue, kernels[i], 1, nullptr, &global, &local, 0, nullptr, nullptr),
        "clEnqueueNDRangeKernel");
  }

  TensorMap outputs() const {
    TensorMap out;
    for (const auto& o : program.outputs) {
      Tensor t(o.dtype, o.shape);
      cl_mem source = o.region == Region::Arena     ? arena
                      : o.region == Region::Weights ? weights
                      : o.region == Region::Inputs  ? inputs
                                                    : scratch;
      if (t.nbytes() > 0) {
        check(clEnqueueReadBuffer(queue, source, CL_TRUE, static_cast<std::size_t>(o.offset),
                                  t.nbytes(), t.raw(), 0, nullptr, nullptr),
              "reading outputs");
      }
      out[o.name] = std::move(t);
    }
    return out;
  }
};

OpenCLExecutor::OpenCLExecutor(const DeviceProgram& program)
    : impl_(std::make_unique<Impl>(program)) {}

OpenCLExecutor::~OpenCLExecutor() = default;

void OpenCLExecutor::execute(const TensorMap& inputs) {
  impl_->upload(inputs);
  for (std::size_t i = 0; i < impl_->kernels.size(); ++i) impl_->launch(i);
  check(clFinish(impl_->queue), "clFinish");
}

TensorMap OpenCLExecutor::outputs() const {
  return impl_->outputs();
}

std::vector<double> OpenCLExecutor::execute_timed(const TensorMap& inputs) {
  impl_->upload(inputs);
  check(clFinish(impl_->queue), "clFinish");
  std::vector<double> us(impl_->program.plan_kernels, 0.0);
  std::size_t i = 0;
  const auto& launches = impl_->program.launches;
  for (std::size_t k = 0; k < us.size(); ++k) {
    const auto start = std::chrono::steady_clock::now();
    for (; i < launches.size() && launches[i].plan_kernel == k; ++i) impl_->launch(i);
    check(clFinish(impl_->queue), "clFinish");
    us[k] =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  }
  return us;
}

std::string OpenCLExecutor::device_name() const {
  char name[256] = {};
  clGetDeviceInfo(impl_->device, CL_DEVICE_NAME, sizeof(name) - 1, name, nullptr);
  return name;
}

bool OpenCLExecutor::available(std::string* why) {
  cl_platform_id p;
  cl_device_id d;
  return first_device(&p, &d, why);
}

}  // namespace orchid::codegen
