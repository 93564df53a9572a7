#include "runtime/onednn_pool_resample.hpp"

#include <cmath>

#include "ir/op_traits.hpp"
#include "ir/ops/window_geometry.hpp"
#include "runtime/onednn_memory.hpp"

namespace orchid {

namespace {

using dnnl::memory;

UnaryDnnlOp unary_dnnl_op(dnnl::primitive prim, std::string implementation,
                          const memory::desc& src_md, const memory::desc& dst_md,
                          const dnnl::engine& engine) {
  UnaryDnnlOp op;
  op.prim = std::move(prim);
  op.implementation = std::move(implementation);
  op.src = memory(src_md, engine, DNNL_MEMORY_NONE);
  op.dst = memory(dst_md, engine, DNNL_MEMORY_NONE);
  op.args = {{DNNL_ARG_SRC, op.src}, {DNNL_ARG_DST, op.dst}};
  return op;
}

}  // namespace

void UnaryDnnlOp::run(dnnl::stream& stream, const void* x, void* y) {
  src.set_data_handle(const_cast<void*>(x));
  dst.set_data_handle(y);
  prim.execute(stream, args);
}

std::optional<UnaryDnnlOp> make_pool(const dnnl::engine& engine, const Graph& g, const Node& node,
                                     const UnaryLayouts& layouts) {
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
  const memory::desc src_md = layouts.src.value_or(plain_desc(to_dims(x.shape)));
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
  return unary_dnnl_op(dnnl::pooling_forward(pd), pd.impl_info_str(), src_md, dst_md, engine);
}

std::optional<UnaryDnnlOp> make_resample(const dnnl::engine& engine, const Graph& g,
                                         const Node& node, const UnaryLayouts& layouts) {
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
  const memory::desc src_md = layouts.src.value_or(plain_desc(to_dims(x.shape)));
  const memory::desc dst_md = layouts.dst.value_or(plain_desc(to_dims(y.shape)));
  const dnnl::resampling_forward::desc desc(dnnl::prop_kind::forward_inference,
                                            dnnl::algorithm::resampling_linear, src_md, dst_md);
  const dnnl::resampling_forward::primitive_desc pd(desc, engine);
  return unary_dnnl_op(dnnl::resampling_forward(pd), pd.impl_info_str(), src_md, dst_md, engine);
}

}  // namespace orchid
