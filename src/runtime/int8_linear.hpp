// int8 linear primitives (QLinearConv, QLinearMatMul as fission keeps them) on oneDNN's
// int8 kernels: u8/s8 source, s8 weights, s32 accumulation, the int32 bias added to the
// accumulator, then one requantization — output scales x_scale * w_scale[c] / y_scale
// (per tensor or per output channel) and the source / result zero points as oneDNN
// attributes — writing the u8/s8 result. Activations are stored plain (NCHW / row-major)
// in the arena; a convolution reorders them into the channels-last layout oneDNN's int8
// kernels take (1 byte per element, cheap), constant weights are packed once at build.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include "ir/graph.hpp"

namespace orchid {

struct Int8LinearOp {
  dnnl::primitive prim;
  dnnl::memory src, dst;            // what the primitive reads and writes
  dnnl::memory src_user, dst_user;  // the arena's plain tensors when reorders are needed
  std::optional<dnnl::reorder> src_reorder, dst_reorder;
  std::unordered_map<int, dnnl::memory> args;  // weights, bias, zero points: owned here
  std::string implementation;                  // oneDNN's name for the kernel it chose

  void run(dnnl::stream& stream, const void* x, void* y);
  std::string describe() const { return "onednn int8 " + implementation; }
};

// Whether oneDNN's int8 kernels on this CPU (or ONEDNN_MAX_CPU_ISA) have VNNI and so sum
// u8*s8 products exactly. Without it they add neighbouring products in int16 with
// saturation (vpmaddubsw); make_int8_linear then refuses weights that could saturate, and
// callers may prefer fp32 after dequantization for QDQ models (orchid run does).
bool int8_kernels_without_saturation();

// The primitive for a QLinearConv / QLinearMatMul whose parameters are constants (fission
// keeps only those), or nullopt with `why` when oneDNN has no int8 kernel for it (the
// executor then runs the reference kernel and says so).
std::optional<Int8LinearOp> make_int8_linear(const dnnl::engine& engine, dnnl::stream& stream,
                                             const Graph& graph, const Node& node,
                                             std::string& why);

}  // namespace orchid
