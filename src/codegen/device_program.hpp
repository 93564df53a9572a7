// What code generation produces for one plan: one source text holding every device
// kernel (prelude + kernels, in the portable dialect, for one target), the launch
// sequence, and where each tensor lives in the four device buffers every kernel takes:
//   arena    activations that cross plan kernels, at the plan's arena offsets
//   scratch  intermediates between the device kernels of one plan kernel (one pool)
//   weights  constants: model weights and the index tables code generation derives
//   inputs   the graph inputs, copied in before each run
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/dialect.hpp"
#include "ir/tensor.hpp"

namespace orchid::codegen {

enum class Region { Arena, Scratch, Weights, Inputs };
// The region's name in generated kernels' parameters and in launches.json.
inline const char* region_name(Region r) {
  switch (r) {
    case Region::Arena:
      return "arena";
    case Region::Scratch:
      return "scratch";
    case Region::Weights:
      return "weights";
    case Region::Inputs:
      return "inputs";
  }
  return "?";
}

// One device kernel launch: `groups` blocks (work-groups) of ORCHID_BLOCK threads.
struct Launch {
  std::string name;    // the kernel function in `source`
  std::string family;  // map, row-reduce, window, matmul, conv, conv-transpose
  std::int64_t groups = 1;
  std::size_t plan_kernel = 0;  // the plan kernel it is part of
  std::string ops;              // the primitives it computes, e.g. "MatMul+Add+Relu"
  int vector_width = 1;         // 4: float4 loads/stores along the innermost axis
  int vendor = -1;  // index in DeviceProgram::vendor_calls when a library can run it instead
  std::string vendor_refusal;  // else, for linear stages on CUDA: why no library call fits
};

// Linear stages on the CUDA target: the generated tiled kernels, cuBLASLt/cuDNN calls
// where a stage maps to one, or per stage the faster of the two (timed on the GPU).
enum class LinearBackend { Generated, Vendor, Auto };
struct VendorCall;  // vendor_linear.hpp

struct DeviceConstant {
  std::string name;
  std::int64_t offset = 0;  // in the weights buffer
  std::shared_ptr<const Tensor> data;
};

struct DeviceTensor {
  std::string name;
  Region region = Region::Arena;
  std::int64_t offset = 0;
  DType dtype = DType::F32;
  Shape shape;
};

struct DeviceProgram {
  Target target = Target::OpenCL;
  std::string source;
  std::vector<Launch> launches;  // in execution order
  std::size_t plan_kernels = 0;
  std::int64_t arena_bytes = 0, scratch_bytes = 0, weights_bytes = 0, inputs_bytes = 0;
  std::vector<DeviceConstant> constants;
  std::vector<DeviceTensor> inputs;   // graph inputs, Region::Inputs
  std::vector<DeviceTensor> outputs;  // graph outputs, in graph order
  LinearBackend linear_backend = LinearBackend::Generated;
  std::vector<std::shared_ptr<const VendorCall>> vendor_calls;
};

}  // namespace orchid::codegen
