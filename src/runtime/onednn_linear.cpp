#include "runtime/onednn_linear.hpp"

#include <algorithm>

#include "ir/op_traits.hpp"
#include "ir/ops/window_geometry.hpp"
#include "runtime/onednn_memory.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

using dnnl::memory;

// How a post-op operand's shape maps onto the primitive's dims: right-aligned to `rank`,
// and for a MatMul run as one 2-D GEMM (`collapse`), every dim but the last folded
// into rows (the operand then spans either all rows or one).
struct OperandShaping {
  std::size_t rank = 0;
  bool collapse = false;
};

memory::dims operand_dims(const Shape& shape, const OperandShaping& sh) {
  memory::dims d = padded_dims(shape, sh.rank);
  if (!sh.collapse) return d;
  std::int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < d.size(); ++i) rows *= d[i];
  return {rows, d.back()};
}

// A binary post-op's operand as stored: plain, or in the convolution's result layout
// (it is then the result's size) when `in_result_layout` says so.
memory::desc operand_desc(const Graph& g, const PostOp& p, const OperandShaping& sh,
                          const std::vector<bool>& in_result_layout,
                          const std::optional<ConvLayouts>& preferred, std::size_t index) {
  const memory::dims dims = operand_dims(g.tensor(p.operand).shape, sh);
  if (preferred && index < in_result_layout.size() && in_result_layout[index]) {
    return preferred->dst;
  }
  return plain_desc(dims);
}

// The post-ops from `first` on (the one before it runs as the primitive's bias); the one at
// `sum_at` adds the result buffer's earlier contents (its operand, stored there).
dnnl::primitive_attr post_op_attr(const Graph& g, const std::vector<PostOp>& post_ops,
                                  std::size_t first, const OperandShaping& sh,
                                  const std::vector<bool>& in_result_layout,
                                  const std::optional<ConvLayouts>& preferred,
                                  std::optional<std::size_t> sum_at = std::nullopt) {
  dnnl::primitive_attr attr;
  dnnl::post_ops po;
  for (std::size_t i = first; i < post_ops.size(); ++i) {
    const PostOp& p = post_ops[i];
    if (sum_at == i) {
      po.append_sum(1.0f);
    } else if (p.kind == PostOp::Kind::Eltwise) {
      po.append_eltwise(1.0f, to_dnnl(p.algorithm), p.alpha, p.beta);
    } else {
      po.append_binary(to_dnnl(p.algorithm),
                       operand_desc(g, p, sh, in_result_layout, preferred, i));
    }
  }
  attr.set_post_ops(po);
  return attr;
}

// The bias a first post-op can be: one adding a constant f32 operand that holds a value per
// output channel (Conv: [1, C, 1, 1] aligned to the result; MatMul: [1, ..., 1, N]), as a
// Conv's bias and a Gemm's C become after fission. oneDNN adds a bias inside its kernel; as a
// binary post-op the same addition took a 1x1 convolution (16 -> 96 channels, 112 x 112,
// AVX2, nChw8c) from 187 to 503 µs, and cost 3-5 % on MatMuls. Returns the bias's
// descriptor (`channel_dim`: where the values run in the operand's aligned dims).
std::optional<memory::desc> bias_desc(const Graph& g, const std::vector<PostOp>& post_ops,
                                      const OperandShaping& sh, const memory::dims& dst,
                                      std::size_t channel_dim) {
  if (post_ops.empty()) return std::nullopt;
  const PostOp& p = post_ops.front();
  if (p.kind != PostOp::Kind::Binary || p.algorithm != OnednnAlgorithm::BinaryAdd ||
      !g.is_constant(p.operand) || g.tensor(p.operand).dtype != DType::F32) {
    return std::nullopt;
  }
  const memory::dims d = operand_dims(g.tensor(p.operand).shape, sh);
  if (d.size() != dst.size()) return std::nullopt;
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (d[i] != (i == channel_dim ? dst[i] : 1)) return std::nullopt;
  }
  // A convolution's bias is 1-D; a MatMul's has the result's rank.
  return channel_dim == 1 && d.size() == 4 ? plain_desc({dst[1]}) : plain_desc(d);
}

struct ConvDescs {
  memory::dims src, wei, dst, strides, dilation, pad_l, pad_r;
};

ConvDescs conv_dims(const Graph& g, const Node& node) {
  const Shape& xs = g.tensor(node.inputs[0]).shape;
  const Shape& ws = g.tensor(node.inputs[1]).shape;
  const WindowGeometry geo =
      window_geometry(node, {xs.begin() + 2, xs.end()}, {ws.begin() + 2, ws.end()}, false);
  const std::int64_t group = node.attr_int("group", 1);
  ConvDescs d;
  d.src = to_dims(xs);
  d.dst = to_dims(g.tensor(node.outputs[0]).shape);
  d.wei = group == 1 ? to_dims(ws) : memory::dims{group, ws[0] / group, ws[1], ws[2], ws[3]};
  d.strides.assign(geo.strides.begin(), geo.strides.end());
  for (auto x : geo.dilations) d.dilation.push_back(x - 1);
  d.pad_l.assign(geo.pad_begin.begin(), geo.pad_begin.end());
  d.pad_r.assign(geo.pad_end.begin(), geo.pad_end.end());
  return d;
}

bool is_matmul(const Node& node) {
  return op_traits(node.op_type).onednn == OnednnAlgorithm::MatMul;
}

bool is_convolution(const Node& node) {
  return op_traits(node.op_type).onednn == OnednnAlgorithm::Convolution;
}

// oneDNN's gemm (the matmul of every ISA below AVX-512 with brgemm) packs panels of the
// weights on every call, reading K rows of a [K, N] matrix at a stride of N floats. Where
// that stride is an even multiple of 64 bytes, the rows fall into a few cache sets and
// evict each other: BERT's and GPT-2's FFN weights (N = 3072, 12 KiB rows) ran at half the
// speed of the same product with rows padded to an odd multiple of 64 bytes (AMD Zen 4 with
// AVX2: 64x768x3072 3.4 -> 1.7 ms, 197x768x3072 9.4 -> 5.2 ms, 64x3072x768 2.0 -> 1.4 ms).
// The row stride, in floats, for weights of N columns: N where padding would not help
// (narrow matrices, or a stride already an odd multiple of 64 bytes).
memory::dim padded_weight_rows(memory::dim n) {
  if (n < 64) return n;
  memory::dim ld = (n + 15) / 16 * 16;
  if ((ld / 16) % 2 == 0) ld += 16;
  return ld;
}

}  // namespace

dnnl::algorithm to_dnnl(OnednnAlgorithm a) {
  using A = dnnl::algorithm;
  switch (a) {
    case OnednnAlgorithm::EltwiseRelu:
      return A::eltwise_relu;
    case OnednnAlgorithm::EltwiseLogistic:
      return A::eltwise_logistic;
    case OnednnAlgorithm::EltwiseTanh:
      return A::eltwise_tanh;
    case OnednnAlgorithm::EltwiseClip:
      return A::eltwise_clip_v2;
    case OnednnAlgorithm::EltwiseSwish:
      return A::eltwise_swish;
    case OnednnAlgorithm::EltwiseGeluErf:
      return A::eltwise_gelu_erf;
    case OnednnAlgorithm::EltwiseGeluTanh:
      return A::eltwise_gelu_tanh;
    case OnednnAlgorithm::EltwiseHardSwish:
      return A::eltwise_hardswish;
    case OnednnAlgorithm::BinaryAdd:
      return A::binary_add;
    case OnednnAlgorithm::BinarySub:
      return A::binary_sub;
    case OnednnAlgorithm::BinaryMul:
      return A::binary_mul;
    case OnednnAlgorithm::BinaryDiv:
      return A::binary_div;
    case OnednnAlgorithm::BinaryMax:
      return A::binary_max;
    case OnednnAlgorithm::BinaryMin:
      return A::binary_min;
    case OnednnAlgorithm::Convolution:
      return A::convolution_direct;
    case OnednnAlgorithm::PoolingMax:
      return A::pooling_max;
    case OnednnAlgorithm::PoolingAverage:
      return A::pooling_avg_exclude_padding;
    case OnednnAlgorithm::ResamplingLinear:
      return A::resampling_linear;
    case OnednnAlgorithm::MatMul:
    case OnednnAlgorithm::None:
      break;
  }
  internal_error("oneDNN algorithm {} has no dnnl::algorithm", static_cast<int>(a));
}

void LinearOp::run(dnnl::stream& stream, const void* a, const void* b, void* y,
                   const std::vector<const void*>& extra) {
  if (src_reorder) {
    src_user.set_data_handle(const_cast<void*>(a));
    src_reorder->execute(stream, src_user, src);
  } else {
    src.set_data_handle(const_cast<void*>(a));
  }
  if (!packed_weights) wei.set_data_handle(const_cast<void*>(b));
  for (std::size_t i = 0; i < binary.size(); ++i) {
    const void* operand = extra[binary_extra[i]];
    if (binary_reorder[i]) {
      binary_user[i].set_data_handle(const_cast<void*>(operand));
      binary_reorder[i]->execute(stream, binary_user[i], binary[i]);
    } else {
      binary[i].set_data_handle(const_cast<void*>(operand));
    }
  }
  if (dst_reorder) {
    prim.execute(stream, args);
    dst_user.set_data_handle(y);
    dst_reorder->execute(stream, dst, dst_user);
  } else {
    dst.set_data_handle(y);
    prim.execute(stream, args);
  }
}

std::vector<memory*> LinearOp::reordered_copies() {
  std::vector<memory*> m;
  if (src_reorder) m.push_back(&src);
  if (dst_reorder) m.push_back(&dst);
  for (std::size_t i = 0; i < binary.size(); ++i) {
    if (binary_reorder[i]) m.push_back(&binary[i]);
  }
  return m;
}

bool linear_supported(const Graph& g, const Node& node) {
  for (const auto& t : node.inputs) {
    if (t.empty() || g.tensor(t).dtype != DType::F32) return false;
  }
  if (is_matmul(node)) return true;
  return is_convolution(node) && node.inputs.size() == 2 &&
         g.tensor(node.inputs[0]).shape.size() == 4;
}

namespace {

// NHWC (which equals plain where only one of C, H x W exceeds 1), or another layout than
// plain that needs no more bytes: the tensor still fits its arena slot.
bool usable_layout(const memory::desc& chosen, const memory::dims& dims) {
  const memory::desc plain = plain_desc(dims);
  if (chosen == nhwc_desc(dims)) return true;
  return chosen != plain && chosen.get_size() == plain.get_size();
}

// Whether a convolution runs faster on oneDNN's blocked layouts than on NHWC with its AVX2
// kernels: a dense one with a 3x3 or larger window and 32 or more channels in and out,
// strided, or at stride 1 on 32x32 pixels or more. oneDNN 2.6 alone, 2 threads, nChw8c
// against NHWC on an AMD EPYC (Zen 3, AVX2 only): Candy's stride-2 convolutions 32->64 at
// 226² 9.5-10.3 -> 3.8-4.6 ms and 64->128 at 114² 8.6-9.2 -> 3.8-4.0, ResNet-50's 128->128
// at stride 2 (56² -> 28²) 5.3-5.8 -> 2.0-2.3, its 256 and 512 channel ones 10-15 % faster
// (in the model, with the reorders their NHWC 1x1 neighbours then need: 3.4 / 2.6 / 3.4 ->
// 2.0 / 2.0 / 2.2 ms); Candy's residual ones (128 channels, 58²) 14.8 -> 7.4-7.9 (on an
// Intel Xeon masked to AVX2: 5.0 -> 4.2 ms, the whole model 118-120 -> 107-110 ms).
// Blocked layouts for every convolution made other models slower (SqueezeNet 1.1: 4.2 ->
// 5.6 ms, SegFormer-B0 113 -> 123, MobileNetV2 3.9 -> 4.2: their 1x1 and depthwise
// convolutions, concatenations and pooling do better on NHWC); small stride-1 ones, alone
// 5-18 % faster blocked, stay on NHWC beside them (SqueezeNet's 3x3 expands at 13² and
// 27², concatenated with 1x1 ones, made the model slower blocked).
bool blocked_is_faster_on_avx2(const memory::dims& src, const memory::dims& wei,
                               const memory::dims& dst, const memory::dims& strides) {
  const bool strided =
      std::any_of(strides.begin(), strides.end(), [](memory::dim s) { return s > 1; });
  return wei.size() == 4 && wei[2] * wei[3] >= 9 && src[1] >= 32 && dst[1] >= 32 &&
         (strided || dst[2] * dst[3] >= 1024);
}

// NHWC wherever oneDNN has more than its reference kernel for it, else the layouts it
// chooses itself where usable. oneDNN's own choice on AVX2 is nChw8c, which pads channel
// counts that are no multiple of 8 (usable_layout then refuses it: the tensors stayed
// plain, reordered around every such convolution) and which fused loops read through
// offset tables. Its AVX2 kernels on NHWC ran within 5 % of nChw8c for most convolutions
// (1x1, depthwise, 7x7 stem, small 3x3), and faster where nChw8c pads: YOLOX-nano's
// 12-channel stem 1.06 vs 1.38 ms; wide dense ones do better blocked (above). On AVX-512
// its own choice is NHWC already.
std::optional<ConvLayouts> preferred_layouts(const dnnl::engine& engine, const memory::dims& src,
                                             const memory::dims& wei, const memory::dims& dst,
                                             const memory::dims& strides,
                                             const memory::dims& dilation,
                                             const memory::dims& pad_l, const memory::dims& pad_r) {
  const auto prop = dnnl::prop_kind::forward_inference;
  const auto alg = dnnl::algorithm::convolution_direct;
  const dnnl::convolution_forward::desc nhwc(prop, alg, nhwc_desc(src), any_desc(wei),
                                             nhwc_desc(dst), strides, dilation, pad_l, pad_r);
  const dnnl::convolution_forward::primitive_desc on_nhwc(nhwc, engine);
  const std::string nhwc_impl = on_nhwc.impl_info_str();
  const bool nhwc_fast = !is_reference_implementation(nhwc_impl);
  const bool try_blocked = nhwc_impl.find(":avx2") != std::string::npos &&
                           blocked_is_faster_on_avx2(src, wei, dst, strides);
  if (nhwc_fast && !try_blocked) return ConvLayouts{nhwc_desc(src), nhwc_desc(dst)};
  const dnnl::convolution_forward::desc any(prop, alg, any_desc(src), any_desc(wei), any_desc(dst),
                                            strides, dilation, pad_l, pad_r);
  const dnnl::convolution_forward::primitive_desc own(any, engine);
  if (usable_layout(own.src_desc(), src) && usable_layout(own.dst_desc(), dst) &&
      own.src_desc() != plain_desc(src)) {
    return ConvLayouts{own.src_desc(), own.dst_desc()};
  }
  if (nhwc_fast) return ConvLayouts{nhwc_desc(src), nhwc_desc(dst)};
  return std::nullopt;
}

}  // namespace

std::optional<memory::desc> activation_preferred_layout(const dnnl::engine& engine,
                                                        const memory::dims& dims) {
  if (dims.size() != 4) return std::nullopt;
  const memory::dims wei{dims[1], dims[1], 1, 1};
  const memory::dims none{0, 0};
  const std::optional<ConvLayouts> l =
      preferred_layouts(engine, dims, wei, dims, {1, 1}, none, none, none);
  if (!l) return std::nullopt;
  return l->src;
}

std::optional<ConvLayouts> conv_preferred_layouts(const dnnl::engine& engine, const Graph& g,
                                                  const Node& node) {
  if (!is_convolution(node) || !g.is_constant(node.inputs[1])) return std::nullopt;
  const ConvDescs d = conv_dims(g, node);
  return preferred_layouts(engine, d.src, d.wei, d.dst, d.strides, d.dilation, d.pad_l, d.pad_r);
}

LinearOp make_linear(const dnnl::engine& engine, dnnl::stream& stream, const Graph& g,
                     const Node& node, const std::vector<PostOp>& post_ops,
                     const LinearLayout& layout, PackedWeights& packing) {
  LinearOp op;
  memory::desc src_md, wei_md, dst_md;  // plain, as the arena holds them
  std::optional<memory::desc> bias;     // the first post-op, run as the primitive's bias
  const bool weights_constant = g.is_constant(node.inputs[1]);
  std::optional<memory::desc> chosen_wei;
  OperandShaping shaping{4, false};
  if (is_matmul(node)) {
    Shape as = g.tensor(node.inputs[0]).shape;
    Shape bs = g.tensor(node.inputs[1]).shape;
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    const std::size_t rank = std::max(as.size(), bs.size());
    const memory::dims ad = padded_dims(as, rank), bd = padded_dims(bs, rank);
    memory::dims yd(rank);
    for (std::size_t i = 0; i + 2 < rank; ++i) yd[i] = ad[i] == 1 ? bd[i] : ad[i];
    yd[rank - 2] = ad[rank - 2];
    yd[rank - 1] = bd[rank - 1];
    shaping.rank = rank;
    // Weights shared by every batch ([K, N], e.g. torchvision ViT's [L, 1, E] tokens):
    // one [B*M, K] x [K, N] GEMM instead of B small ones (197 GEMVs for ViT-B/16).
    bool shared = rank > 2;
    for (std::size_t i = 0; i + 2 < rank; ++i) shared = shared && bd[i] == 1;
    for (const auto& p : post_ops) {
      if (!shared || p.kind != PostOp::Kind::Binary) continue;
      const memory::dims od = padded_dims(g.tensor(p.operand).shape, rank);
      bool all_rows = true, one_row = true;
      for (std::size_t i = 0; i + 1 < rank; ++i) {
        all_rows = all_rows && od[i] == yd[i];
        one_row = one_row && od[i] == 1;
      }
      shared = all_rows || one_row;
    }
    memory::dims ad2 = ad, bd2 = bd, yd2 = yd;
    if (shared) {
      shaping.collapse = true;
      std::int64_t rows = 1;
      for (std::size_t i = 0; i + 1 < rank; ++i) rows *= ad[i];
      ad2 = {rows, ad[rank - 1]};
      bd2 = {bd[rank - 2], bd[rank - 1]};
      yd2 = {rows, yd[rank - 1]};
    }
    src_md = plain_desc(ad2);
    wei_md = plain_desc(bd2);
    dst_md = plain_desc(yd2);
    bias = bias_desc(g, post_ops, shaping, yd2, yd2.size() - 1);
    const dnnl::primitive_attr attr = post_op_attr(g, post_ops, bias ? 1 : 0, shaping, {}, {});
    const auto make_pd = [&](const memory::desc& wei_want) {
      const dnnl::matmul::desc desc = bias ? dnnl::matmul::desc(src_md, wei_want, *bias, dst_md)
                                           : dnnl::matmul::desc(src_md, wei_want, dst_md);
      return dnnl::matmul::primitive_desc(desc, attr, engine);
    };
    dnnl::matmul::primitive_desc pd = make_pd(weights_constant ? any_desc(bd2) : wei_md);
    // Constant weights that oneDNN reads plain (its gemm, e.g. on AVX2) get their rows padded
    // (padded_weight_rows); the primitive must stay the same implementation.
    if (weights_constant && bd2.size() == 2 && pd.weights_desc() == wei_md) {
      const memory::dim ld = padded_weight_rows(bd2[1]);
      if (ld != bd2[1]) {
        const memory::desc padded(bd2, memory::data_type::f32, memory::dims{ld, 1});
        dnnl::matmul::primitive_desc padded_pd = make_pd(padded);
        if (std::string(padded_pd.impl_info_str()) == pd.impl_info_str()) pd = padded_pd;
      }
    }
    op.prim = dnnl::matmul(pd);
    op.implementation = pd.impl_info_str();
    op.src = memory(src_md, engine, DNNL_MEMORY_NONE);
    op.dst = memory(dst_md, engine, DNNL_MEMORY_NONE);
    chosen_wei = pd.weights_desc();
  } else {
    const ConvDescs d = conv_dims(g, node);
    src_md = plain_desc(d.src);
    dst_md = plain_desc(d.dst);
    wei_md = plain_desc(d.wei);
    const bool choose = weights_constant;
    const memory::desc src_want = layout.preferred ? layout.preferred->src
                                  : choose         ? any_desc(d.src)
                                                   : src_md;
    const memory::desc dst_want = layout.preferred ? layout.preferred->dst
                                  : choose         ? any_desc(d.dst)
                                                   : dst_md;
    bias = bias_desc(g, post_ops, shaping, d.dst, 1);
    const memory::desc wei_want = choose ? any_desc(d.wei) : wei_md;
    const auto prop = dnnl::prop_kind::forward_inference;
    const auto alg = dnnl::algorithm::convolution_direct;
    const dnnl::convolution_forward::desc desc =
        bias ? dnnl::convolution_forward::desc(prop, alg, src_want, wei_want, *bias, dst_want,
                                               d.strides, d.dilation, d.pad_l, d.pad_r)
             : dnnl::convolution_forward::desc(prop, alg, src_want, wei_want, dst_want, d.strides,
                                               d.dilation, d.pad_l, d.pad_r);
    const bool src_kept = layout.preferred && layout.src_stored_preferred;
    const bool dst_kept = layout.preferred && layout.dst_stored_preferred;
    const memory::desc src_stored = src_kept ? layout.preferred->src : src_md;
    const memory::desc dst_stored = dst_kept ? layout.preferred->dst : dst_md;
    // A residual stored in the result's buffer, in its layout, with no reorder between:
    // added as a sum post-op (in_place_residuals.hpp), if the primitive then writes that
    // buffer itself. Otherwise it stays a binary post-op reading the same address, which
    // is safe there: an operand's reorder copies it first, a result's reorder writes it
    // after, and with neither both have one layout, each element read where it is written.
    auto make_pd = [&](std::optional<std::size_t> sum) {
      return dnnl::convolution_forward::primitive_desc(
          desc,
          post_op_attr(g, post_ops, bias ? 1 : 0, shaping, layout.operand_used_preferred,
                       layout.preferred, sum),
          engine);
    };
    for (std::size_t i = bias ? 1 : 0; i < post_ops.size() && dst_kept; ++i) {
      const auto flag = [&](const std::vector<bool>& v) { return i < v.size() && v[i]; };
      if (post_ops[i].kind == PostOp::Kind::Binary &&
          post_ops[i].algorithm == OnednnAlgorithm::BinaryAdd && flag(layout.operand_in_place) &&
          flag(layout.operand_stored_preferred) && flag(layout.operand_used_preferred)) {
        op.sum_at = i;
        break;
      }
    }
    dnnl::convolution_forward::primitive_desc pd = make_pd(op.sum_at);
    // Nor where the sum leaves only oneDNN's reference kernel: its AVX2 convolutions take
    // a sum only as the first post-op, and a residual added after a SiLU ran 100x slower
    // there (YOLOX-nano's plan from an AVX-512 machine: 18 ms per convolution).
    const auto reference = [](const dnnl::convolution_forward::primitive_desc& p) {
      return is_reference_implementation(p.impl_info_str());
    };
    if (op.sum_at && (pd.dst_desc() != dst_stored || reference(pd))) {
      dnnl::convolution_forward::primitive_desc binary = make_pd(std::nullopt);
      if (pd.dst_desc() != dst_stored || !reference(binary)) {
        op.sum_at.reset();
        pd = binary;
      }
    }
    op.prim = dnnl::convolution_forward(pd);
    op.implementation = pd.impl_info_str();
    op.src = memory(pd.src_desc(), engine, DNNL_MEMORY_NONE);
    op.dst = memory(pd.dst_desc(), engine, DNNL_MEMORY_NONE);
    if (pd.src_desc() != src_stored) {
      op.src_user = memory(src_stored, engine, DNNL_MEMORY_NONE);
      op.src_reorder = dnnl::reorder(op.src_user, op.src);
    }
    if (pd.dst_desc() != dst_stored) {
      op.dst_user = memory(dst_stored, engine, DNNL_MEMORY_NONE);
      op.dst_reorder = dnnl::reorder(op.dst, op.dst_user);
    }
    chosen_wei = pd.weights_desc();
  }
  // A constant whose original was released (packed_weights.hpp) comes from its packed
  // copy, even in the plain layout.
  const std::string& wei_name = node.inputs[1];
  const bool released =
      weights_constant && packing.holds_weights_of(g) && packing.released(wei_name);
  if (*chosen_wei != wei_md || released) {
    // Only reached for constant weights: packed once, shared by the primitives using them.
    op.packed =
        packing.get(engine, stream, wei_name, *g.tensor(wei_name).data, wei_md, *chosen_wei);
    op.wei = memory(*chosen_wei, engine, op.packed->get_data_handle());
    op.packed_weights = true;
  } else {
    op.wei = memory(wei_md, engine, DNNL_MEMORY_NONE);
  }
  op.args = {{DNNL_ARG_SRC, op.src}, {DNNL_ARG_WEIGHTS, op.wei}, {DNNL_ARG_DST, op.dst}};
  if (bias) {
    const auto values = g.tensor(post_ops.front().operand).data->values<float>();
    op.bias_values.assign(values.begin(), values.end());
    op.args[DNNL_ARG_BIAS] = memory(*bias, engine, op.bias_values.data());
  }
  const std::size_t first = bias ? 1 : 0;
  std::size_t operand = first;  // its place among the binary post-ops' operands (`extra`)
  for (std::size_t i = first; i < post_ops.size(); ++i) {
    if (post_ops[i].kind != PostOp::Kind::Binary) continue;
    if (op.sum_at == i) {  // read where the result is written: no operand of its own
      ++operand;
      continue;
    }
    op.binary_extra.push_back(operand++);
    const memory::desc stored =
        operand_desc(g, post_ops[i], shaping, layout.operand_stored_preferred, layout.preferred, i);
    const memory::desc used =
        operand_desc(g, post_ops[i], shaping, layout.operand_used_preferred, layout.preferred, i);
    op.binary.push_back(memory(used, engine, DNNL_MEMORY_NONE));
    op.binary_user.push_back(memory(stored, engine, DNNL_MEMORY_NONE));
    op.binary_reorder.emplace_back();
    if (stored != used)
      op.binary_reorder.back() = dnnl::reorder(op.binary_user.back(), op.binary.back());
    op.args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i - first)) | DNNL_ARG_SRC_1] =
        op.binary.back();
  }
  return op;
}

}  // namespace orchid
