// Runs a VendorCall (vendor_linear.hpp) on the GPU: cuBLASLt for GEMMs, cuDNN for
// convolutions, both loaded with dlopen at first use like the driver, so orchid builds
// and runs without them. Internal to the CUDA executor (needs cuda.h).
#pragma once

#include <cuda.h>

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "codegen/vendor_linear.hpp"

namespace orchid::codegen {

// Device memory the vendor ops need besides the program's buffers (workspaces, a zero
// bias), allocated by the executor and freed with it.
struct VendorMemory {
  std::function<CUdeviceptr(std::size_t bytes)> alloc;
  std::function<void(CUdeviceptr dst, const void* src, std::size_t bytes)> upload;
};

class VendorOp {
 public:
  virtual ~VendorOp() = default;
  // `bases` by Region: arena, scratch, weights, inputs. Enqueued on `stream` (capturable
  // in a CUDA graph).
  virtual void enqueue(const std::array<CUdeviceptr, 4>& bases, CUstream stream) = 0;
};

// Descriptors, algorithm and workspace for `call`; null with `why` when the library is
// not installed or has no algorithm for it.
std::unique_ptr<VendorOp> make_vendor_op(const VendorCall& call, const VendorMemory& memory,
                                         std::string* why);

}  // namespace orchid::codegen
