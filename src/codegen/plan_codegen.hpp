// Device code for a whole orchestration plan: every plan kernel becomes one or more
// device kernels (stages) in the portable dialect, with the device buffers laid out.
//
// Within a plan kernel, each tensor that must reach memory (a kernel output, or an
// intermediate that cannot be recomputed where it is read) is stored by exactly one
// stage; everything else is computed inline where it is needed. A stage is built
// around at most one anchor (a GEMM, a convolution, a pooling window) or a group of
// reductions over the same rows, whose consumers (an epilogue, a softmax's division)
// join it when they read it at the coordinates it was computed at. The planner starts
// from the most fused arrangement and stores an anchor's result to scratch memory
// whenever the kernel writer refuses a fusion, until every stage can be written.
#pragma once

#include <map>
#include <string>

#include "codegen/device_program.hpp"
#include "ir/graph.hpp"
#include "orchestrate/plan.hpp"

namespace orchid::codegen {

struct CodegenOptions {
  // float4 loads and stores in the map and row-reduce families where the innermost
  // extent is a multiple of 4 and the tensors' offsets are 16-byte aligned.
  bool vectorize = true;
  // CUDA target: MatMul/Conv stages that map to cuBLASLt/cuDNN get a VendorCall
  // (vendor_linear.hpp) beside their generated kernel; the executor picks per backend.
  LinearBackend linear_backend = LinearBackend::Generated;
};

// `primitives` is the primitive graph the plan indexes (Orchestration::fission.graph),
// `alternatives` the fission's alternative map. An UnsupportedError names the first
// node without device code.
DeviceProgram generate_device_program(const Graph& primitives, const Plan& plan,
                                      const std::map<std::string, std::string>& alternatives,
                                      Target target, const CodegenOptions& options = {});

}  // namespace orchid::codegen
