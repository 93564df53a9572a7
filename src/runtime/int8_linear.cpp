#include "runtime/int8_linear.hpp"

#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "runtime/onednn_memory.hpp"

namespace orchid {

namespace {

using dnnl::memory;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dt int8_type(DType d) {
  return d == DType::U8 ? dt::u8 : dt::s8;
}

const Tensor* constant(const Graph& g, const Node& n, std::size_t i) {
  if (!n.has_input(i) || !g.has_tensor(n.inputs[i])) return nullptr;
  return g.tensor(n.inputs[i]).data.get();
}

// A one-element s32 memory holding a zero point (oneDNN reads it at run time).
memory zero_point_memory(const dnnl::engine& engine, std::int32_t value) {
  memory m({{1}, dt::s32, tag::x}, engine);
  std::memcpy(m.get_data_handle(), &value, sizeof value);
  return m;
}

// Copies `t` (row-major) into a new memory of `dims`/`type` stored plain (`plain_tag`).
memory plain_copy(const dnnl::engine& engine, const Tensor& t, const memory::dims& dims, dt type,
                  tag plain_tag) {
  memory m({dims, type, plain_tag}, engine);
  std::memcpy(m.get_data_handle(), t.raw(), t.nbytes());
  return m;
}

// Without VNNI, oneDNN's u8*s8 kernels multiply with vpmaddubsw, which adds the products of
// two neighbouring weights along the reduction (input channels of one tap; MatMul rows
// 2j, 2j+1) in int16 with saturation: exact only while |w_a| + |w_b| <= 128
// (255 * 128 < 32768). ONNX Runtime documents the same limit of these instructions.
}  // namespace

bool int8_kernels_without_saturation() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core_vnni || isa == dnnl::cpu_isa::avx512_core_bf16 ||
         isa == dnnl::cpu_isa::avx512_core_amx || isa == dnnl::cpu_isa::avx2_vnni;
}

namespace {

// Whether some neighbouring pair of weights could saturate an int16 pair sum. `w` is
// [O, I, kh, kw] (Conv, I per group; depthwise kernels widen to int32 and have no pairs)
// or [K, N] (MatMul).
bool pair_sums_may_saturate(const Tensor& w, bool conv, std::int64_t groups) {
  const std::int8_t* v = w.data<std::int8_t>();
  const Shape& s = w.shape();
  auto big = [&](std::int64_t a, std::int64_t b) { return std::abs(v[a]) + std::abs(v[b]) > 128; };
  if (!conv) {
    for (std::int64_t k = 0; k + 1 < s[0]; k += 2) {
      for (std::int64_t n = 0; n < s[1]; ++n) {
        if (big(k * s[1] + n, (k + 1) * s[1] + n)) return true;
      }
    }
    return false;
  }
  if (s[1] == 1 && groups > 1) return false;  // depthwise
  const std::int64_t taps = s[2] * s[3];
  for (std::int64_t o = 0; o < s[0]; ++o) {
    for (std::int64_t i = 0; i + 1 < s[1]; i += 2) {
      for (std::int64_t t = 0; t < taps; ++t) {
        if (big((o * s[1] + i) * taps + t, (o * s[1] + i + 1) * taps + t)) return true;
      }
    }
  }
  return false;
}

}  // namespace

void Int8LinearOp::run(dnnl::stream& stream, const void* x, void* y) {
  if (src_reorder) {
    src_user.set_data_handle(const_cast<void*>(x));
    src_reorder->execute(stream, src_user, src);
  } else {
    src.set_data_handle(const_cast<void*>(x));
  }
  if (!dst_reorder) dst.set_data_handle(y);
  prim.execute(stream, args);
  if (dst_reorder) {
    dst_user.set_data_handle(y);
    dst_reorder->execute(stream, dst, dst_user);
  }
}

std::optional<Int8LinearOp> make_int8_linear(const dnnl::engine& engine, dnnl::stream& stream,
                                             const Graph& g, const Node& n, std::string& why) {
  const bool conv = n.op_type == "QLinearConv";
  if (!conv && n.op_type != "QLinearMatMul") {
    why = "not an int8 linear primitive";
    return std::nullopt;
  }
  const Tensor* xs = constant(g, n, 1);
  const Tensor* xz = constant(g, n, 2);
  const Tensor* w = constant(g, n, 3);
  const Tensor* ws = constant(g, n, 4);
  const Tensor* ys = constant(g, n, 6);
  const Tensor* yz = constant(g, n, 7);
  const Tensor* bias = conv ? constant(g, n, 8) : nullptr;
  if (!xs || !w || !ws || !ys || w->dtype() != DType::I8 || (conv && n.has_input(8) && !bias)) {
    why = "parameters computed at run time or non-int8 weights";
    return std::nullopt;
  }
  if (!int8_kernels_without_saturation() &&
      pair_sums_may_saturate(*w, conv, std::max<std::int64_t>(1, n.attr_int("group", 1)))) {
    why =
        "this CPU has no VNNI, and oneDNN's u8*s8 kernel would sum these weights in pairs "
        "in int16 and could saturate (|w_a| + |w_b| > 128)";
    return std::nullopt;
  }
  const TensorInfo& x = g.tensor(n.inputs[0]);
  const TensorInfo& y = g.tensor(n.outputs[0]);
  const dt xt = int8_type(x.dtype), yt = int8_type(y.dtype);
  const std::int32_t x_zp = xz ? static_cast<std::int32_t>(xz->get_as_double(0)) : 0;
  const std::int32_t y_zp = yz ? static_cast<std::int32_t>(yz->get_as_double(0)) : 0;

  // Requantization: acc * x_scale * w_scale[c] / y_scale, per output channel or tensor.
  std::vector<float> scales(static_cast<std::size_t>(ws->numel()));
  for (std::size_t c = 0; c < scales.size(); ++c) {
    scales[c] = static_cast<float>(xs->get_as_double(0)) *
                static_cast<float>(ws->get_as_double(static_cast<std::int64_t>(c))) /
                static_cast<float>(ys->get_as_double(0));
  }
  dnnl::primitive_attr attr;
  Int8LinearOp op;
  try {
    if (conv) {
      const Shape& xsh = x.shape;
      const Shape& wsh = w->shape();
      const std::int64_t groups = std::max<std::int64_t>(1, n.attr_int("group", 1));
      const auto strides = n.attr_ints("strides", {1, 1});
      const auto dil = n.attr_ints("dilations", {1, 1});
      const auto pads = n.attr_ints("pads", {0, 0, 0, 0});
      if (strides.size() != 2 || dil.size() != 2 || pads.size() != 4) {
        why = "convolution attributes of another rank";
        return std::nullopt;
      }
      const memory::dims src_dims = to_dims(xsh), dst_dims = to_dims(y.shape);
      memory::dims wei_dims = to_dims(wsh);
      tag wei_tag = tag::oihw;
      if (groups > 1) {
        wei_dims = {groups, wsh[0] / groups, wsh[1], wsh[2], wsh[3]};
        wei_tag = tag::goihw;
      }
      attr.set_output_scales(scales.size() > 1 ? 1 << 1 : 0, scales);
      if (x_zp != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
      if (y_zp != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
      const memory::desc src_any(src_dims, xt, tag::any), dst_any(dst_dims, yt, tag::any);
      const memory::desc wei_any(wei_dims, dt::s8, tag::any);
      const memory::desc bias_md = bias ? memory::desc({wsh[0]}, dt::s32, tag::x) : memory::desc();
      dnnl::convolution_forward::desc d(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_any, wei_any,
          bias_md, dst_any, {strides[0], strides[1]}, {dil[0] - 1, dil[1] - 1}, {pads[0], pads[1]},
          {pads[2], pads[3]});
      dnnl::convolution_forward::primitive_desc pd(d, attr, engine);
      op.implementation = pd.impl_info_str();
      op.prim = dnnl::convolution_forward(pd);
      const memory::desc src_plain(src_dims, xt, tag::nchw), dst_plain(dst_dims, yt, tag::nchw);
      op.src_user = memory(src_plain, engine, nullptr);
      op.dst_user = memory(dst_plain, engine, nullptr);
      if (pd.src_desc() != src_plain) {
        op.src = memory(pd.src_desc(), engine);
        op.src_reorder = dnnl::reorder(op.src_user, op.src);
      } else {
        op.src = op.src_user;
      }
      if (pd.dst_desc() != dst_plain) {
        op.dst = memory(pd.dst_desc(), engine);
        op.dst_reorder = dnnl::reorder(op.dst, op.dst_user);
      } else {
        op.dst = op.dst_user;
      }
      memory wei_user = plain_copy(engine, *w, wei_dims, dt::s8, wei_tag);
      memory wei(pd.weights_desc(), engine);
      dnnl::reorder(wei_user, wei).execute(stream, wei_user, wei);
      stream.wait();
      op.args[DNNL_ARG_WEIGHTS] = wei;
      if (bias) op.args[DNNL_ARG_BIAS] = plain_copy(engine, *bias, {wsh[0]}, dt::s32, tag::x);
    } else {
      // [..., M, K] x [K, N]: batch dimensions folded into one.
      const Shape& xsh = x.shape;
      const std::int64_t k = xsh.back(), m = xsh[xsh.size() - 2];
      std::int64_t batch = 1;
      for (std::size_t i = 0; i + 2 < xsh.size(); ++i) batch *= xsh[i];
      const std::int64_t nn = w->shape()[1];
      const memory::dims src_dims{batch, m, k}, wei_dims{1, k, nn}, dst_dims{batch, m, nn};
      attr.set_output_scales(scales.size() > 1 ? 1 << 2 : 0, scales);
      if (x_zp != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
      if (y_zp != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
      const memory::desc src_md(src_dims, xt, tag::abc), dst_md(dst_dims, yt, tag::abc);
      const memory::desc wei_any(wei_dims, dt::s8, tag::any);
      dnnl::matmul::desc d(src_md, wei_any, dst_md);
      dnnl::matmul::primitive_desc pd(d, attr, engine);
      op.implementation = pd.impl_info_str();
      op.prim = dnnl::matmul(pd);
      op.src = memory(src_md, engine, nullptr);
      op.dst = memory(dst_md, engine, nullptr);
      memory wei_user = plain_copy(engine, *w, wei_dims, dt::s8, tag::abc);
      memory wei(pd.weights_desc(), engine);
      dnnl::reorder(wei_user, wei).execute(stream, wei_user, wei);
      stream.wait();
      op.args[DNNL_ARG_WEIGHTS] = wei;
    }
  } catch (const dnnl::error& e) {
    why = fmt::format("oneDNN has no int8 kernel for it ({})", e.what());
    return std::nullopt;
  }
  op.args[DNNL_ARG_SRC] = op.src;
  op.args[DNNL_ARG_DST] = op.dst;
  if (x_zp != 0)
    op.args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC] = zero_point_memory(engine, x_zp);
  if (y_zp != 0)
    op.args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST] = zero_point_memory(engine, y_zp);
  return op;
}

}  // namespace orchid
