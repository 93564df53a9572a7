// Memory-bound primitives on oneDNN: pooling, spatial means, resampling, concatenation and
// transposition, plain or
// stored as given (the blocked / channels-last layout the convolutions around them use:
// oneDNN's plain-layout pooling on AVX2 is its slow reference kernel, and a Concat run as
// plain copies made its producers and consumers reorder), for the cases oneDNN maps exactly
// onto ONNX's definition (otherwise the reference kernel runs).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "ir/graph.hpp"

namespace orchid {

struct MemoryBoundOp {
  // A plain Concat runs as block copies instead (oneDNN 2.6's simple concat took 121 µs
  // where memcpy takes 22 for YOLOX-nano's head, [1, 4|1|80, 52, 52] -> [1, 85, 52, 52]):
  // byte ranges from source `src` at `from` to the result at `to`.
  struct Copy {
    std::size_t src = 0;
    std::int64_t from = 0, to = 0, bytes = 0;
  };
  std::vector<Copy> copies;  // non-empty: run() copies these instead of running `prim`
  // A MaxPool of an NHWC tensor where oneDNN has no AVX-512 kernel: a max over the window's
  // taps, C channels at a time (oneDNN 2.6's AVX2 pooling took 408 µs for SqueezeNet's
  // [1, 64, 111, 111] 3x3 / 2 where ONNX Runtime's took about 90).
  struct WindowMax {
    std::int64_t n = 0, c = 0, h = 0, w = 0, oh = 0, ow = 0;
    std::int64_t kh = 0, kw = 0, sh = 0, sw = 0, ph = 0, pw = 0;
  };
  std::optional<WindowMax> window_max;  // set: run() computes it instead of `prim`
  dnnl::primitive prim;
  std::vector<dnnl::memory> srcs;  // one per source
  dnnl::memory dst;
  std::unordered_map<int, dnnl::memory> args;
  std::string implementation;  // oneDNN's name for the kernel it chose

  void run(dnnl::stream& stream, std::span<const void* const> xs, void* y);
};

// How a primitive's sources and result are stored (nullopt: plain). `srcs` is empty or
// has one entry per source.
struct MemoryBoundLayouts {
  std::vector<std::optional<dnnl::memory::desc>> srcs;
  std::optional<dnnl::memory::desc> dst;
};

// A 2-D MaxPool / AveragePool, or nullopt outside what oneDNN maps exactly: f32, one
// output (no Indices), no dilation, and for AveragePool with count_include_pad no
// ceil_mode (oneDNN would count the ceil-extended taps too).
std::optional<MemoryBoundOp> make_pool(const dnnl::engine& engine, const Graph& graph,
                                       const Node& node, const MemoryBoundLayouts& layouts = {});

// A 4-D linear Resize of the spatial axes with half-pixel centres (PyTorch's
// align_corners=False), or nullopt: oneDNN's linear resampling is exactly that, source
// coordinates clamped to the edges as in ONNX. The scales must be the size ratios.
std::optional<MemoryBoundOp> make_resample(const dnnl::engine& engine, const Graph& graph,
                                           const Node& node,
                                           const MemoryBoundLayouts& layouts = {});

// A ReduceMean of a 4-D f32 tensor over its two spatial axes, keeping them (an SE block's
// or a classifier's global average pool), as an average pooling over the whole image, or
// nullopt: a fused loop reducing such a tensor stored channels-last reads it with a stride.
std::optional<MemoryBoundOp> make_spatial_mean(const dnnl::engine& engine, const Graph& graph,
                                               const Node& node,
                                               const MemoryBoundLayouts& layouts = {});

// A Concat of f32 tensors of rank 1 to 6 with at least two non-empty sources, or nullopt.
// Its sources are every input.
std::optional<MemoryBoundOp> make_concat(const dnnl::engine& engine, const Graph& graph,
                                         const Node& node, const MemoryBoundLayouts& layouts = {});

// A Transpose of an f32 tensor of rank 2 to 6, as oneDNN's reorder from the source read
// through permuted axes to the result, each plain or stored as given, or nullopt. An
// NHWC <-> NCHW transposition next to a channels-last convolution becomes a straight copy.
std::optional<MemoryBoundOp> make_transpose(const dnnl::engine& engine, const Graph& graph,
                                            const Node& node,
                                            const MemoryBoundLayouts& layouts = {});

// Whichever of the five fits `node`, or nullopt.
std::optional<MemoryBoundOp> make_memory_bound(const dnnl::engine& engine, const Graph& graph,
                                               const Node& node,
                                               const MemoryBoundLayouts& layouts = {});

// Whether the primitive reads and writes its source and result in any layouts, each on
// its own, as a fused loop does (a Transpose: a reorder between any two layouts).
bool memory_bound_any_layouts(const Node& node);

// Whether the primitive's result has the same bytes in every layout its consumers may keep
// it in (a spatial mean's [N, C, 1, 1]): it then follows its source's layout, whichever
// layout the tensor is kept in.
bool memory_bound_result_any_layout(const Node& node);

// How many of the node's inputs a memory-bound primitive reads as sources (the others,
// Resize's scales or sizes, are constants).
std::size_t memory_bound_sources(const Node& node);

}  // namespace orchid
