// Vendor library calls for linear stages on the CUDA target: a MatMul stage becomes one
// cuBLASLt matmul with its epilogue (bias, ReLU, GELU), a 2-D Conv stage one cuDNN
// convolution + bias + activation. This header is the host-side description, decided
// at code generation time from the stage's primitives; the CUDA executor turns it into
// library descriptors (cuda_vendor.cpp), so which stages map to which call, with which
// epilogue and strides, is testable without a GPU.
//
// A stage maps only when the library computes exactly what the generated kernel would:
// operands read straight from memory (a transposed B is a flag), one stored result, and
// an epilogue the library has. Everything else stays generated.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "codegen/device_program.hpp"
#include "codegen/kernel_families.hpp"

namespace orchid::codegen {

LinearBackend parse_linear_backend(const std::string& name);
std::string linear_backend_name(LinearBackend backend);

enum class VendorActivation { None, Relu };
std::string activation_name(VendorActivation a);

// Row-major C[b] = A[b] (m x k) * B[b] (k x n) (+ bias[n]) then the activation. Batch
// strides are in elements; 0 broadcasts one matrix to every batch.
struct VendorGemm {
  std::int64_t batch = 1, m = 1, n = 1, k = 1;
  DeviceTensor a, b, c;
  std::optional<DeviceTensor> bias;  // n floats
  bool transpose_b = false;          // B is stored as [n x k] (a Transpose of the last axes)
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  VendorActivation activation = VendorActivation::None;
};

// NCHW cross-correlation (+ bias[k]) then the activation.
struct VendorConv {
  DeviceTensor x, w, y;
  std::optional<DeviceTensor> bias;          // k floats
  std::int64_t n = 1, c = 1, h = 1, wd = 1;  // input
  std::int64_t k = 1, r = 1, s = 1;          // filters (k x c/groups x r x s)
  std::int64_t groups = 1;
  std::int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  VendorActivation activation = VendorActivation::None;
};

// The largest power of two up to 256 that divides the byte address of every batch's
// matrix of `t` (its region's base is 256-byte aligned): cuBLASLt assumes 256 unless told,
// and a kernel picked for aligned operands reads a less aligned one wrongly.
std::uint32_t operand_alignment(const DeviceTensor& t, std::int64_t batch_stride_elements);

struct VendorCall {
  enum class Kind { Gemm, Conv } kind = Kind::Gemm;
  VendorGemm gemm;
  VendorConv conv;
  // "cublasLt matmul [bias+relu]" / "cudnn conv+bias+relu": for summaries and tests.
  std::string describe() const;
};

// The vendor call computing `stage` exactly, or nullopt (with `why`) when it does not
// match. `inline_producer` gives the stage's inline-computed tensors' producers (null
// for tensors read from memory); `locate` where a memory tensor lives.
std::optional<VendorCall> match_vendor_call(
    const Graph& g, const StageSpec& stage,
    const std::function<const Node*(const std::string&)>& inline_producer,
    const std::function<DeviceTensor(const std::string&)>& locate, std::string* why = nullptr);

}  // namespace orchid::codegen
