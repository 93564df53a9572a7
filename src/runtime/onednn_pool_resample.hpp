// Pooling and resampling on oneDNN: primitives with one source and one result, plain NCHW
// or stored as given (the blocked / channels-last layout the convolutions around them
// use: oneDNN's plain-layout pooling on AVX2 is its slow reference kernel), for the cases
// oneDNN maps exactly onto ONNX's definition (otherwise the reference kernel runs).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include "ir/graph.hpp"

namespace orchid {

struct UnaryDnnlOp {
  dnnl::primitive prim;
  dnnl::memory src, dst;
  std::unordered_map<int, dnnl::memory> args;
  std::string implementation;  // oneDNN's name for the kernel it chose

  void run(dnnl::stream& stream, const void* x, void* y);
};

// A 2-D MaxPool / AveragePool, or nullopt outside what oneDNN maps exactly: f32, one
// output (no Indices), no dilation, and for AveragePool with count_include_pad no
// ceil_mode (oneDNN would count the ceil-extended taps too).
// How a pooling / resampling primitive's source and result are stored (nullopt: plain).
struct UnaryLayouts {
  std::optional<dnnl::memory::desc> src, dst;
};

std::optional<UnaryDnnlOp> make_pool(const dnnl::engine& engine, const Graph& graph,
                                     const Node& node, const UnaryLayouts& layouts = {});

// A 4-D linear Resize of the spatial axes with half-pixel centres (PyTorch's
// align_corners=False), or nullopt: oneDNN's linear resampling is exactly that, source
// coordinates clamped to the edges as in ONNX. The scales must be the size ratios.
std::optional<UnaryDnnlOp> make_resample(const dnnl::engine& engine, const Graph& graph,
                                         const Node& node, const UnaryLayouts& layouts = {});

}  // namespace orchid
