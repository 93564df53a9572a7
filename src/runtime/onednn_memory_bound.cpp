#include "runtime/onednn_memory_bound.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "ir/op_traits.hpp"
#include "ir/ops/layout_params.hpp"
#include "ir/ops/reduction_util.hpp"
#include "ir/ops/window_geometry.hpp"
#include "runtime/onednn_memory.hpp"

namespace orchid {

namespace {

using dnnl::memory;

MemoryBoundOp memory_bound_op(dnnl::primitive prim, std::string implementation,
                              const std::vector<memory::desc>& src_mds, const memory::desc& dst_md,
                              const dnnl::engine& engine) {
  MemoryBoundOp op;
  op.prim = std::move(prim);
  op.implementation = std::move(implementation);
  op.dst = memory(dst_md, engine, DNNL_MEMORY_NONE);
  op.args = {{DNNL_ARG_DST, op.dst}};
  const bool one = src_mds.size() == 1;
  for (std::size_t i = 0; i < src_mds.size(); ++i) {
    op.srcs.push_back(memory(src_mds[i], engine, DNNL_MEMORY_NONE));
    op.args.emplace(one ? DNNL_ARG_SRC : DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i),
                    op.srcs.back());
  }
  return op;
}

memory::desc source_desc(const MemoryBoundLayouts& layouts, std::size_t i, const Shape& shape) {
  if (i < layouts.srcs.size() && layouts.srcs[i]) return *layouts.srcs[i];
  return plain_desc(to_dims(shape));
}

// A plain Concat as block copies: per slab above `axis`, each source's run of bytes,
// split into pieces of at most 256 KiB so that both threads share a large one. Nullopt
// where the runs are many and short (a Concat along a short last axis): oneDNN's then.
std::optional<MemoryBoundOp> concat_by_copies(const Graph& g, const Node& node, std::int64_t axis,
                                              const std::vector<memory::desc>& src_mds,
                                              const memory::desc& dst_md,
                                              const dnnl::engine& engine) {
  constexpr std::int64_t kPiece = 256 << 10, kShortest = 256, kMostCopies = 4096;
  const Shape& ys = g.tensor(node.outputs[0]).shape;
  std::int64_t outer = 1, inner = sizeof(float);
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(ys.size()); ++d) {
    if (d < axis) outer *= ys[static_cast<std::size_t>(d)];
    if (d > axis) inner *= ys[static_cast<std::size_t>(d)];
  }
  std::vector<std::int64_t> chunks;  // bytes of each source per slab
  for (const auto& t : node.inputs) {
    chunks.push_back(g.tensor(t).shape[static_cast<std::size_t>(axis)] * inner);
    if (chunks.back() < kShortest) return std::nullopt;
  }
  if (outer * static_cast<std::int64_t>(chunks.size()) > kMostCopies) return std::nullopt;
  const std::int64_t row = ys[static_cast<std::size_t>(axis)] * inner;
  MemoryBoundOp op = memory_bound_op(dnnl::primitive(), "block copies", src_mds, dst_md, engine);
  for (std::int64_t o = 0; o < outer; ++o) {
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      for (std::int64_t b = 0; b < chunks[i]; b += kPiece) {
        op.copies.push_back(
            {i, o * chunks[i] + b, o * row + offset + b, std::min(kPiece, chunks[i] - b)});
      }
      offset += chunks[i];
    }
  }
  return op;
}

// One output row (oy) of an NHWC max pooling: per output pixel, the channel-wise max of
// its taps inside the image (ONNX pads with -inf, so taps outside count for nothing).
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
#endif
void window_max_row(const MemoryBoundOp::WindowMax& p, const float* x, float* y, std::int64_t oy) {
  const std::int64_t C = p.c;
  const std::int64_t y0 = std::max<std::int64_t>(0, oy * p.sh - p.ph);
  const std::int64_t y1 = std::min(p.h, oy * p.sh - p.ph + p.kh);
  for (std::int64_t ox = 0; ox < p.ow; ++ox) {
    const std::int64_t x0 = std::max<std::int64_t>(0, ox * p.sw - p.pw);
    const std::int64_t x1 = std::min(p.w, ox * p.sw - p.pw + p.kw);
    float* out = y + (oy * p.ow + ox) * C;
    if (y0 >= y1 || x0 >= x1) {  // a window in the padding only (ceil mode's last)
      for (std::int64_t c = 0; c < C; ++c) out[c] = -std::numeric_limits<float>::infinity();
      continue;
    }
    const float* first = x + (y0 * p.w + x0) * C;
    for (std::int64_t c = 0; c < C; ++c) out[c] = first[c];
    for (std::int64_t iy = y0; iy < y1; ++iy) {
      for (std::int64_t ix = x0; ix < x1; ++ix) {
        const float* in = x + (iy * p.w + ix) * C;
        // NaN propagates, as in the reference (std::max would drop one on the left).
        for (std::int64_t c = 0; c < C; ++c)
          out[c] = in[c] > out[c] || in[c] != in[c] ? in[c] : out[c];
      }
    }
  }
}

}  // namespace

void MemoryBoundOp::run(dnnl::stream& stream, std::span<const void* const> xs, void* y) {
  if (window_max) {
    const WindowMax& p = *window_max;
    const std::int64_t rows = p.n * p.oh;
#pragma omp parallel for schedule(static) if (rows > 1)
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t n = r / p.oh;
      window_max_row(p, static_cast<const float*>(xs[0]) + n * p.h * p.w * p.c,
                     static_cast<float*>(y) + n * p.oh * p.ow * p.c, r % p.oh);
    }
    return;
  }
  if (!copies.empty()) {
    const auto n = static_cast<std::int64_t>(copies.size());
    auto* out = static_cast<std::byte*>(y);
#pragma omp parallel for schedule(static) if (n > 1)
    for (std::int64_t i = 0; i < n; ++i) {
      const Copy& c = copies[static_cast<std::size_t>(i)];
      std::memcpy(out + c.to, static_cast<const std::byte*>(xs[c.src]) + c.from,
                  static_cast<std::size_t>(c.bytes));
    }
    return;
  }
  for (std::size_t i = 0; i < srcs.size(); ++i) srcs[i].set_data_handle(const_cast<void*>(xs[i]));
  dst.set_data_handle(y);
  prim.execute(stream, args);
}

std::optional<MemoryBoundOp> make_pool(const dnnl::engine& engine, const Graph& g, const Node& node,
                                       const MemoryBoundLayouts& layouts) {
  const OnednnAlgorithm kind = op_traits(node.op_type).onednn;
  const bool max = kind == OnednnAlgorithm::PoolingMax;
  if (!max && kind != OnednnAlgorithm::PoolingAverage) return std::nullopt;
  if (node.inputs.size() != 1 || node.outputs.size() != 1) return std::nullopt;
  const TensorInfo& x = g.tensor(node.inputs[0]);
  const TensorInfo& y = g.tensor(node.outputs[0]);
  if (x.dtype != DType::F32 || x.shape.size() != 4) return std::nullopt;
  if (node.attr_int("storage_order", 0) != 0) return std::nullopt;
  const bool ceil = node.attr_int("ceil_mode", 0) != 0;
  const bool include_pad = node.attr_int("count_include_pad", 0) != 0;
  if (!max && include_pad && ceil) return std::nullopt;
  const auto kernel = node.attr_ints("kernel_shape", {});
  if (kernel.size() != 2) return std::nullopt;
  const WindowGeometry geo =
      window_geometry(node, {x.shape.begin() + 2, x.shape.end()}, kernel, ceil);
  for (auto d : geo.dilations) {
    if (d != 1) return std::nullopt;
  }
  memory::dims pr(2);
  for (std::size_t d = 0; d < 2; ++d) {  // right padding that yields ONNX's output size
    pr[d] = (y.shape[2 + d] - 1) * geo.strides[d] + kernel[d] - x.shape[2 + d] - geo.pad_begin[d];
    if (pr[d] < 0) return std::nullopt;
  }
  const memory::desc src_md = source_desc(layouts, 0, x.shape);
  const memory::desc dst_md = layouts.dst.value_or(plain_desc(to_dims(y.shape)));
  const auto alg = max           ? dnnl::algorithm::pooling_max
                   : include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                 : dnnl::algorithm::pooling_avg_exclude_padding;
  const dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_inference, alg, src_md, dst_md,
                                         memory::dims(geo.strides.begin(), geo.strides.end()),
                                         memory::dims(kernel.begin(), kernel.end()),
                                         memory::dims(geo.pad_begin.begin(), geo.pad_begin.end()),
                                         pr);
  const dnnl::pooling_forward::primitive_desc pd(desc, engine);
  const std::string impl = pd.impl_info_str();
  if (max && src_md == nhwc_desc(to_dims(x.shape)) && dst_md == nhwc_desc(to_dims(y.shape)) &&
      impl.find("avx512") == std::string::npos) {
    MemoryBoundOp op = memory_bound_op(dnnl::primitive(), "window max", {src_md}, dst_md, engine);
    op.window_max = MemoryBoundOp::WindowMax{
        x.shape[0], x.shape[1], x.shape[2],     x.shape[3],     y.shape[2],       y.shape[3],
        kernel[0],  kernel[1],  geo.strides[0], geo.strides[1], geo.pad_begin[0], geo.pad_begin[1]};
    return op;
  }
  return memory_bound_op(dnnl::pooling_forward(pd), impl, {src_md}, dst_md, engine);
}

std::optional<MemoryBoundOp> make_resample(const dnnl::engine& engine, const Graph& g,
                                           const Node& node, const MemoryBoundLayouts& layouts) {
  if (op_traits(node.op_type).onednn != OnednnAlgorithm::ResamplingLinear) return std::nullopt;
  if (node.outputs.size() != 1) return std::nullopt;
  if (node.attr_string("mode", "nearest") != "linear") return std::nullopt;
  const std::string ctm = node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (ctm != "half_pixel" && ctm != "pytorch_half_pixel") return std::nullopt;
  // oneDNN interpolates two taps at the size ratio: no antialiased filter, and no common
  // keep_aspect_ratio_policy scale that differs from out / in (those run the reference).
  if (node.attr_int("antialias", 0) != 0) return std::nullopt;
  if (node.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch") return std::nullopt;
  const TensorInfo& x = g.tensor(node.inputs[0]);
  const TensorInfo& y = g.tensor(node.outputs[0]);
  if (x.dtype != DType::F32 || x.shape.size() != 4) return std::nullopt;
  if (x.shape[0] != y.shape[0] || x.shape[1] != y.shape[1]) return std::nullopt;
  if (ctm == "pytorch_half_pixel" && (y.shape[2] == 1 || y.shape[3] == 1)) return std::nullopt;
  if (node.has_input(2)) {  // given scales must be the size ratios oneDNN uses
    if (!g.is_constant(node.inputs[2])) return std::nullopt;
    const Tensor& scales = *g.tensor(node.inputs[2]).data;
    if (scales.numel() != 0) {
      if (scales.numel() != 4) return std::nullopt;
      for (int d = 2; d < 4; ++d) {
        const double ratio = static_cast<double>(y.shape[d]) / static_cast<double>(x.shape[d]);
        if (std::fabs(scales.get_as_double(d) - ratio) > 1e-6 * ratio) return std::nullopt;
      }
    }
  }
  const memory::desc src_md = source_desc(layouts, 0, x.shape);
  const memory::desc dst_md = layouts.dst.value_or(plain_desc(to_dims(y.shape)));
  const dnnl::resampling_forward::desc desc(dnnl::prop_kind::forward_inference,
                                            dnnl::algorithm::resampling_linear, src_md, dst_md);
  const dnnl::resampling_forward::primitive_desc pd(desc, engine);
  return memory_bound_op(dnnl::resampling_forward(pd), pd.impl_info_str(), {src_md}, dst_md,
                         engine);
}

std::optional<MemoryBoundOp> make_spatial_mean(const dnnl::engine& engine, const Graph& g,
                                               const Node& node,
                                               const MemoryBoundLayouts& layouts) {
  if (node.op_type != "ReduceMean" || node.outputs.size() != 1) return std::nullopt;
  if (node.attr_int("keepdims", 1) != 1) return std::nullopt;
  const TensorInfo& x = g.tensor(node.inputs[0]);
  if (x.dtype != DType::F32 || x.shape.size() != 4 || shape_numel(x.shape) == 0) {
    return std::nullopt;
  }
  const Tensor* axes = nullptr;
  if (node.has_input(1)) {
    if (!g.is_constant(node.inputs[1])) return std::nullopt;
    axes = g.tensor(node.inputs[1]).data.get();
  }
  const auto reduced = reduction_util::resolve_reduction_axes(node, axes, 4);
  if (reduced.noop || reduced.reduced != std::vector<bool>{false, false, true, true}) {
    return std::nullopt;
  }
  const memory::dims src = to_dims(x.shape);
  const memory::dims dst{src[0], src[1], 1, 1};
  const memory::desc src_md = source_desc(layouts, 0, x.shape);
  // [N, C, 1, 1] has the same bytes in the source's format as plain (and as any layout
  // without padding): written so, the pooling runs on one format.
  memory::desc dst_md = plain_desc(dst);
  for (auto tag : {memory::format_tag::nhwc, memory::format_tag::nChw16c,
                   memory::format_tag::nChw8c, memory::format_tag::nChw4c}) {
    if (src_md == memory::desc(src, memory::data_type::f32, tag)) {
      const memory::desc same(dst, memory::data_type::f32, tag);
      if (same.get_size() == dst_md.get_size()) dst_md = same;
      break;
    }
  }
  const dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_inference,
                                         dnnl::algorithm::pooling_avg_exclude_padding, src_md,
                                         dst_md, {1, 1}, {src[2], src[3]}, {0, 0}, {0, 0});
  const dnnl::pooling_forward::primitive_desc pd(desc, engine);
  return memory_bound_op(dnnl::pooling_forward(pd), pd.impl_info_str(), {src_md}, dst_md, engine);
}

std::optional<MemoryBoundOp> make_concat(const dnnl::engine& engine, const Graph& g,
                                         const Node& node, const MemoryBoundLayouts& layouts) {
  if (node.op_type != "Concat" || node.outputs.size() != 1 || node.inputs.size() < 2) {
    return std::nullopt;
  }
  const TensorInfo& y = g.tensor(node.outputs[0]);
  const auto rank = static_cast<std::int64_t>(y.shape.size());
  if (y.dtype != DType::F32 || rank < 1 || rank > 6) return std::nullopt;
  for (const auto& t : node.inputs) {  // oneDNN refuses empty sources
    if (t.empty() || g.tensor(t).dtype != DType::F32 || shape_numel(g.tensor(t).shape) == 0) {
      return std::nullopt;
    }
  }
  std::int64_t axis = node.attr_int("axis", 0);
  if (axis < 0) axis += rank;
  std::vector<memory::desc> src_mds;
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    src_mds.push_back(source_desc(layouts, i, g.tensor(node.inputs[i]).shape));
  }
  const memory::desc dst_md = layouts.dst.value_or(plain_desc(to_dims(y.shape)));
  bool plain = dst_md == plain_desc(to_dims(y.shape));
  for (std::size_t i = 0; i < src_mds.size(); ++i) {
    plain = plain && src_mds[i] == plain_desc(to_dims(g.tensor(node.inputs[i]).shape));
  }
  if (plain) {
    if (auto op = concat_by_copies(g, node, axis, src_mds, dst_md, engine)) return op;
  }
  const dnnl::concat::primitive_desc pd(dst_md, static_cast<int>(axis), src_mds, engine);
  return memory_bound_op(dnnl::concat(pd), pd.impl_info_str(), src_mds, dst_md, engine);
}

std::optional<MemoryBoundOp> make_transpose(const dnnl::engine& engine, const Graph& g,
                                            const Node& node, const MemoryBoundLayouts& layouts) {
  if (node.op_type != "Transpose" || node.inputs.size() != 1 || node.outputs.size() != 1) {
    return std::nullopt;
  }
  const TensorInfo& x = g.tensor(node.inputs[0]);
  const std::size_t rank = x.shape.size();
  if (x.dtype != DType::F32 || rank < 2 || rank > 6 || shape_numel(x.shape) == 0) {
    return std::nullopt;
  }
  const std::vector<std::int64_t> perm = transpose_perm(node, rank);
  // The source as stored, its axes renamed to the result's: oneDNN's permutation says
  // where each source axis goes, the inverse of ONNX's perm.
  std::vector<int> where(rank);
  memory::dims dims(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    where[static_cast<std::size_t>(perm[d])] = static_cast<int>(d);
    dims[d] = x.shape[static_cast<std::size_t>(perm[d])];
  }
  const memory::desc src_md = source_desc(layouts, 0, x.shape).permute_axes(where);
  const memory::desc dst_md = layouts.dst.value_or(plain_desc(dims));
  const dnnl::reorder::primitive_desc pd(engine, src_md, engine, dst_md);
  return memory_bound_op(dnnl::reorder(pd), pd.impl_info_str(), {src_md}, dst_md, engine);
}

std::optional<MemoryBoundOp> make_memory_bound(const dnnl::engine& engine, const Graph& g,
                                               const Node& node,
                                               const MemoryBoundLayouts& layouts) {
  if (auto op = make_pool(engine, g, node, layouts)) return op;
  if (auto op = make_resample(engine, g, node, layouts)) return op;
  if (auto op = make_spatial_mean(engine, g, node, layouts)) return op;
  if (auto op = make_transpose(engine, g, node, layouts)) return op;
  return make_concat(engine, g, node, layouts);
}

bool memory_bound_any_layouts(const Node& node) {
  return node.op_type == "Transpose";
}

bool memory_bound_result_any_layout(const Node& node) {
  return node.op_type == "ReduceMean";
}

std::size_t memory_bound_sources(const Node& node) {
  return node.op_type == "Concat" ? node.inputs.size() : 1;
}

}  // namespace orchid
