#include "runtime/plan_executor.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <unordered_map>

#include "eval/reference/reference_kernels.hpp"
#include "fission/kernel_view.hpp"
#include "fission/primitive.hpp"
#include "ir/ops/window_geometry.hpp"
#include "runtime/fused/fused_loop.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

using dnnl::memory;

// Where a tensor a kernel reads lives.
struct Location {
  enum class Kind { Arena, Input, Constant, Scratch } kind = Kind::Arena;
  std::int64_t offset = 0;  // Arena, Scratch
  std::size_t input = 0;    // Input: position in graph.inputs
  const Tensor* constant = nullptr;
};

memory::dims to_dims(const Shape& s) {
  return memory::dims(s.begin(), s.end());
}

memory::dims row_major_strides(const memory::dims& dims) {
  memory::dims strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

memory::desc plain_desc(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, row_major_strides(dims));
}

// Right-aligns `shape` to `rank` with leading ones.
memory::dims padded(const Shape& shape, std::size_t rank) {
  memory::dims d(rank, 1);
  for (std::size_t i = 0; i < shape.size(); ++i) d[rank - shape.size() + i] = shape[i];
  return d;
}

bool broadcasts_to(const Shape& small, const Shape& big) {
  if (small.size() > big.size()) return false;
  for (std::size_t i = 0; i < small.size(); ++i) {
    const std::int64_t a = small[small.size() - 1 - i];
    const std::int64_t b = big[big.size() - 1 - i];
    if (a != 1 && a != b) return false;
  }
  return true;
}

// One linear primitive on oneDNN, optionally with post-ops. Memory objects are made
// once; each run only swaps their data handles. Convolutions run in the activation and
// weight layouts oneDNN prefers on this CPU (NHWC on AVX-512): where the tensor is stored
// otherwise (plain NCHW), the source is reordered from `src_user` into `src` before and
// the result from `dst` into `dst_user` after the convolution; constant weights are
// reordered once, at build time (`packed_weights`). oneDNN's channels-last kernels are
// several times faster than the im2col+GEMM path it takes for plain layouts, which is
// worth far more than the reorders.
struct LinearOp {
  dnnl::primitive prim;
  memory src, wei, dst;       // what the primitive reads and writes
  memory src_user, dst_user;  // plain views of arena tensors when reorders are needed
  std::optional<dnnl::reorder> src_reorder, dst_reorder;
  bool packed_weights = false;  // `wei` owns a reordered copy of constant weights
  std::vector<memory> binary;   // post-op src1 tensors, in post-op order
  // Per binary post-op: a full-size operand stored plain for an NHWC convolution is
  // reordered into `binary[i]` first (oneDNN 2.6 reads such operands in the result's
  // layout whatever their descriptor says, so they must match it).
  std::vector<std::optional<dnnl::reorder>> binary_reorder;
  std::vector<memory> binary_user;
  std::unordered_map<int, memory> args;
  std::string implementation;  // oneDNN's name for the kernel it chose

  void run(dnnl::stream& stream, const void* a, const void* b, void* y,
           const std::vector<const void*>& extra) {
    if (src_reorder) {
      src_user.set_data_handle(const_cast<void*>(a));
      src_reorder->execute(stream, src_user, src);
    } else {
      src.set_data_handle(const_cast<void*>(a));
    }
    if (!packed_weights) wei.set_data_handle(const_cast<void*>(b));
    for (std::size_t i = 0; i < binary.size(); ++i) {
      if (binary_reorder[i]) {
        binary_user[i].set_data_handle(const_cast<void*>(extra[i]));
        binary_reorder[i]->execute(stream, binary_user[i], binary[i]);
      } else {
        binary[i].set_data_handle(const_cast<void*>(extra[i]));
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
};

struct PostOp {
  enum class Kind { Binary, Eltwise } kind;
  dnnl::algorithm algorithm;
  float alpha = 0, beta = 0;
  std::string operand;  // Binary: the other input
};

memory::desc nhwc_desc(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, memory::format_tag::nhwc);
}

// How a post-op operand's shape maps onto the primitive's dims: right-aligned to `rank`,
// and for a MatMul run as one 2-D GEMM (`collapse`), every dim but the last folded
// into rows (the operand then spans either all rows or one).
struct OperandShaping {
  std::size_t rank = 0;
  bool collapse = false;
};

memory::dims operand_dims(const Shape& shape, const OperandShaping& sh) {
  memory::dims d = padded(shape, sh.rank);
  if (!sh.collapse) return d;
  std::int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < d.size(); ++i) rows *= d[i];
  return {rows, d.back()};
}

// A binary post-op's operand as stored: plain, or NHWC when the layout says so.
memory::desc operand_desc(const Graph& g, const PostOp& p, const OperandShaping& sh,
                          const std::vector<bool>& stored_nhwc, std::size_t index) {
  const memory::dims dims = operand_dims(g.tensor(p.operand).shape, sh);
  if (index < stored_nhwc.size() && stored_nhwc[index]) return nhwc_desc(dims);
  return plain_desc(dims);
}

dnnl::primitive_attr post_op_attr(const Graph& g, const std::vector<PostOp>& post_ops,
                                  const OperandShaping& sh, const std::vector<bool>& stored_nhwc) {
  dnnl::primitive_attr attr;
  dnnl::post_ops po;
  for (std::size_t i = 0; i < post_ops.size(); ++i) {
    const PostOp& p = post_ops[i];
    if (p.kind == PostOp::Kind::Eltwise) {
      po.append_eltwise(1.0f, p.algorithm, p.alpha, p.beta);
    } else {
      po.append_binary(p.algorithm, operand_desc(g, p, sh, stored_nhwc, i));
    }
  }
  attr.set_post_ops(po);
  return attr;
}

// Whether make_linear maps `node` onto oneDNN: MatMul, or a 2-D Conv without bias
// input (fission splits the bias off), all f32.
bool linear_supported(const Graph& g, const Node& node) {
  for (const auto& t : node.inputs) {
    if (t.empty() || g.tensor(t).dtype != DType::F32) return false;
  }
  if (node.op_type == "MatMul") return true;
  return node.op_type == "Conv" && node.inputs.size() == 2 &&
         g.tensor(node.inputs[0]).shape.size() == 4;
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

memory::desc any_desc(const memory::dims& d) {
  return memory::desc(d, memory::data_type::f32, memory::format_tag::any);
}

// Whether oneDNN, free to choose, runs this convolution on channels-last (NHWC)
// activations. Such convolutions can hand their results to each other in NHWC without
// reorders (see PlanExecutor::Impl::choose_channels_last).
bool conv_prefers_nhwc(const dnnl::engine& engine, const Graph& g, const Node& node) {
  if (!g.is_constant(node.inputs[1])) return false;
  const ConvDescs d = conv_dims(g, node);
  const dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any_desc(d.src),
      any_desc(d.wei), any_desc(d.dst), d.strides, d.dilation, d.pad_l, d.pad_r);
  const dnnl::convolution_forward::primitive_desc pd(desc, engine);
  return pd.src_desc() == nhwc_desc(d.src) && pd.dst_desc() == nhwc_desc(d.dst);
}

// How a linear stage's activations are stored (LinearOp): which of its tensors live in
// NHWC rather than plain NCHW.
struct LinearLayout {
  bool nhwc = false;  // the convolution runs on NHWC activations
  bool src_stored_nhwc = false, dst_stored_nhwc = false;
  std::vector<bool> operand_stored_nhwc;  // per post-op
  std::vector<bool> operand_used_nhwc;    // per post-op: full-size operand of an NHWC conv
};

// Builds the oneDNN primitive for a node linear_supported() accepts, with `post_ops`.
// Constant weights are packed once into the layout the primitive prefers. Convolutions
// choose their activation layout (any), or run NHWC as `layout` says; activations stored
// otherwise are reordered before / after.
LinearOp make_linear(const dnnl::engine& engine, dnnl::stream& stream, const Graph& g,
                     const Node& node, const std::vector<PostOp>& post_ops,
                     const LinearLayout& layout) {
  LinearOp op;
  memory::desc src_md, wei_md, dst_md;  // plain, as the arena holds them
  const bool weights_constant = g.is_constant(node.inputs[1]);
  std::optional<memory::desc> chosen_wei;
  OperandShaping shaping{4, false};
  if (node.op_type == "MatMul") {
    Shape as = g.tensor(node.inputs[0]).shape;
    Shape bs = g.tensor(node.inputs[1]).shape;
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    const std::size_t rank = std::max(as.size(), bs.size());
    const memory::dims ad = padded(as, rank), bd = padded(bs, rank);
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
      const memory::dims od = padded(g.tensor(p.operand).shape, rank);
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
    const dnnl::matmul::desc desc(src_md, weights_constant ? any_desc(bd2) : wei_md, dst_md);
    const dnnl::matmul::primitive_desc pd(desc, post_op_attr(g, post_ops, shaping, {}), engine);
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
    const memory::desc src_want = layout.nhwc ? nhwc_desc(d.src)
                                  : choose    ? any_desc(d.src)
                                              : src_md;
    const memory::desc dst_want = layout.nhwc ? nhwc_desc(d.dst)
                                  : choose    ? any_desc(d.dst)
                                              : dst_md;
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_want,
        choose ? any_desc(d.wei) : wei_md, dst_want, d.strides, d.dilation, d.pad_l, d.pad_r);
    const dnnl::convolution_forward::primitive_desc pd(
        desc, post_op_attr(g, post_ops, shaping, layout.operand_used_nhwc), engine);
    op.prim = dnnl::convolution_forward(pd);
    op.implementation = pd.impl_info_str();
    op.src = memory(pd.src_desc(), engine, DNNL_MEMORY_NONE);
    op.dst = memory(pd.dst_desc(), engine, DNNL_MEMORY_NONE);
    const memory::desc src_stored = layout.src_stored_nhwc ? nhwc_desc(d.src) : src_md;
    const memory::desc dst_stored = layout.dst_stored_nhwc ? nhwc_desc(d.dst) : dst_md;
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
  if (*chosen_wei != wei_md) {
    // Only reached for constant weights: pack them once.
    const Tensor& w = *g.tensor(node.inputs[1]).data;
    memory user(wei_md, engine, const_cast<std::byte*>(w.raw()));
    op.wei = memory(*chosen_wei, engine);
    dnnl::reorder(user, op.wei).execute(stream, user, op.wei);
    stream.wait();
    op.packed_weights = true;
  } else {
    op.wei = memory(wei_md, engine, DNNL_MEMORY_NONE);
  }
  op.args = {{DNNL_ARG_SRC, op.src}, {DNNL_ARG_WEIGHTS, op.wei}, {DNNL_ARG_DST, op.dst}};
  for (std::size_t i = 0; i < post_ops.size(); ++i) {
    if (post_ops[i].kind != PostOp::Kind::Binary) continue;
    const memory::desc stored =
        operand_desc(g, post_ops[i], shaping, layout.operand_stored_nhwc, i);
    const memory::desc used = operand_desc(g, post_ops[i], shaping, layout.operand_used_nhwc, i);
    op.binary.push_back(memory(used, engine, DNNL_MEMORY_NONE));
    op.binary_user.push_back(memory(stored, engine, DNNL_MEMORY_NONE));
    op.binary_reorder.emplace_back();
    if (stored != used)
      op.binary_reorder.back() = dnnl::reorder(op.binary_user.back(), op.binary.back());
    op.args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i)) | DNNL_ARG_SRC_1] =
        op.binary.back();
  }
  return op;
}

// A oneDNN primitive with one source and one result, both plain NCHW: pooling or
// resampling.
struct UnaryDnnlOp {
  dnnl::primitive prim;
  memory src, dst;
  std::unordered_map<int, memory> args;
  std::string implementation;
};

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

// A 2-D MaxPool / AveragePool, or nullopt outside what oneDNN maps exactly: f32, one
// output (no Indices), no dilation, and for AveragePool with count_include_pad no
// ceil_mode (oneDNN would count the ceil-extended taps too).
std::optional<UnaryDnnlOp> make_pool(const dnnl::engine& engine, const Graph& g, const Node& node) {
  const bool max = node.op_type == "MaxPool";
  if (!max && node.op_type != "AveragePool") return std::nullopt;
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
  const memory::desc src_md = plain_desc(to_dims(x.shape));
  const memory::desc dst_md = plain_desc(to_dims(y.shape));
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

// A 4-D linear Resize of the spatial axes with half-pixel centres (PyTorch's
// align_corners=False), or nullopt: oneDNN's linear resampling is exactly that, source
// coordinates clamped to the edges as in ONNX. The scales must be the size ratios.
std::optional<UnaryDnnlOp> make_resample(const dnnl::engine& engine, const Graph& g,
                                         const Node& node) {
  if (node.op_type != "Resize" || node.outputs.size() != 1) return std::nullopt;
  if (node.attr_string("mode", "nearest") != "linear") return std::nullopt;
  const std::string ctm = node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (ctm != "half_pixel" && ctm != "pytorch_half_pixel") return std::nullopt;
  if (node.attr_int("antialias", 0) != 0) return std::nullopt;
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
  const memory::desc src_md = plain_desc(to_dims(x.shape));
  const memory::desc dst_md = plain_desc(to_dims(y.shape));
  const dnnl::resampling_forward::desc desc(dnnl::prop_kind::forward_inference,
                                            dnnl::algorithm::resampling_linear, src_md, dst_md);
  const dnnl::resampling_forward::primitive_desc pd(desc, engine);
  return unary_dnnl_op(dnnl::resampling_forward(pd), pd.impl_info_str(), src_md, dst_md, engine);
}

bool is_f32(const Graph& g, const std::string& t) {
  return g.tensor(t).dtype == DType::F32;
}

// A constant scalar's value, if `t` is one.
std::optional<float> constant_scalar(const Graph& g, const std::string& t) {
  if (t.empty() || !g.is_constant(t)) return std::nullopt;
  const TensorInfo& info = g.tensor(t);
  if (info.data->numel() != 1) return std::nullopt;
  return static_cast<float>(info.data->get_as_double(0));
}

// The epilogue node as a post-op reading `chain` (the running value), or nullopt.
std::optional<PostOp> as_post_op(const Graph& g, const Node& n, const std::string& chain,
                                 const Shape& out_shape, const std::set<std::string>& internal) {
  if (n.outputs.size() != 1 || !is_f32(g, n.outputs[0])) return std::nullopt;
  if (g.tensor(n.outputs[0]).shape != out_shape) return std::nullopt;
  const std::string& op = n.op_type;
  auto eltwise = [](dnnl::algorithm a, float alpha = 0, float beta = 0) {
    return PostOp{PostOp::Kind::Eltwise, a, alpha, beta, {}};
  };
  if (n.inputs.size() == 1 && n.inputs[0] == chain) {
    if (op == "Relu") return eltwise(dnnl::algorithm::eltwise_relu);
    if (op == "Sigmoid") return eltwise(dnnl::algorithm::eltwise_logistic);
    if (op == "Tanh") return eltwise(dnnl::algorithm::eltwise_tanh);
  }
  if (op == "Clip" && !n.inputs.empty() && n.inputs[0] == chain) {
    const auto lo = n.has_input(1) ? constant_scalar(g, n.inputs[1]) : std::optional<float>(-3e38f);
    const auto hi = n.has_input(2) ? constant_scalar(g, n.inputs[2]) : std::optional<float>(3e38f);
    if (lo && hi) return eltwise(dnnl::algorithm::eltwise_clip_v2, *lo, *hi);
    return std::nullopt;
  }
  if (n.inputs.size() != 2) return std::nullopt;
  const bool first = n.inputs[0] == chain;
  const bool second = n.inputs[1] == chain;
  if (first == second) return std::nullopt;
  const std::string& other = first ? n.inputs[1] : n.inputs[0];
  if (internal.count(other) || !is_f32(g, other)) return std::nullopt;
  if (!broadcasts_to(g.tensor(other).shape, out_shape)) return std::nullopt;
  if (g.tensor(other).shape.size() > out_shape.size()) return std::nullopt;
  dnnl::algorithm a;
  if (op == "Add") {
    a = dnnl::algorithm::binary_add;
  } else if (op == "Mul") {
    a = dnnl::algorithm::binary_mul;
  } else if (op == "Sub" && first) {
    a = dnnl::algorithm::binary_sub;
  } else if (op == "Div" && first) {
    a = dnnl::algorithm::binary_div;
  } else if ((op == "Max" || op == "Min") && constant_scalar(g, other)) {
    const float c = *constant_scalar(g, other);
    return op == "Max" ? eltwise(dnnl::algorithm::eltwise_clip_v2, c, 3e38f)
                       : eltwise(dnnl::algorithm::eltwise_clip_v2, -3e38f, c);
  } else {
    return std::nullopt;
  }
  return PostOp{PostOp::Kind::Binary, a, 0, 0, other};
}

}  // namespace

struct PlanExecutor::Impl {
  const Graph& graph;
  const Plan& plan;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::byte* arena = nullptr;
  std::byte* scratch = nullptr;      // one pool every kernel's intermediates share
  std::byte* layout_pool = nullptr;  // reordered copies of a convolution's source, result, operands
  std::int64_t layout_peak = 0;
  std::unordered_map<std::string, std::int64_t> arena_offset;
  std::vector<const std::byte*> input_ptrs;  // bound per execute()
  std::unordered_map<std::string, std::size_t> input_index;
  std::vector<std::pair<std::string, Location>> output_locations;
  PlanExecutorStats stats;

  // A linear primitive on oneDNN, epilogue folded in as post-ops.
  struct LinearStage {
    const Node* node = nullptr;
    std::vector<PostOp> post_ops;
    std::string src, wei, dst;  // the tensors read and written (as the arena names them)
    bool prefers_nhwc = false;  // conv_prefers_nhwc
    LinearOp op;                // built once every stage is known (build_linear_ops)
    Location a, b, y;
    std::vector<Location> extra;
    std::vector<const void*> extra_ptrs;  // reused every run
  };
  struct LoopStage {
    std::unique_ptr<FusedLoop> loop;
    std::vector<Location> reads, writes;
    std::vector<const std::byte*> read_ptrs;
    std::vector<std::byte*> write_ptrs;
  };
  // One primitive on its reference kernel, reading and writing views in place.
  struct ReferenceStage {
    const Node* node = nullptr;
    ReferenceKernel kernel = nullptr;
    std::vector<Tensor> in_views, out_views;
    std::vector<const Tensor*> ins;                     // per node input: view, constant or null
    std::vector<Location> in_locations, out_locations;  // per view
    std::vector<const Tensor*> in_constants;            // per node input
    std::vector<std::pair<std::size_t, std::size_t>> rebound;  // in_views[i] <- input k
  };
  struct UnaryDnnlStage {
    UnaryDnnlOp op;
    Location x, y;
  };
  struct Stage {
    std::optional<LinearStage> linear;
    std::optional<LoopStage> loop;
    std::optional<ReferenceStage> reference;
    std::optional<UnaryDnnlStage> unary;  // pooling or resampling on oneDNN
    std::vector<std::string> reads;       // loop/reference stages: tensors read (arena names)
  };
  std::vector<std::vector<Stage>> kernels;
  std::int64_t scratch_peak = 0;

  PlanExecutorOptions options;

  Impl(const Graph& g, const Plan& p, const std::map<std::string, std::string>& alternatives,
       const PlanExecutorOptions& opts)
      : graph(g), plan(p), options(opts) {
    stats.kernels = p.kernels.size();
    stats.arena_bytes = p.arena_bytes;
    for (const auto& w : g.weights()) {
      stats.weight_bytes += static_cast<std::int64_t>(g.tensor(w).data->nbytes());
    }
    arena = static_cast<std::byte*>(
        std::aligned_alloc(64, static_cast<std::size_t>((p.arena_bytes + 63) / 64 * 64 + 64)));
    for (const auto& s : p.arena) arena_offset[s.tensor] = s.offset;
    for (std::size_t i = 0; i < g.inputs.size(); ++i) input_index[g.inputs[i]] = i;
    input_ptrs.assign(g.inputs.size(), nullptr);
    for (const auto& out : g.outputs) {
      std::optional<Location> loc = locate_or_none(out);
      if (!loc) {
        for (const auto& [alt, main] : alternatives) {
          if (main == out && arena_offset.count(alt)) loc = locate(alt);
        }
      }
      if (!loc) fail("plan executor: graph output '{}' has no location in the plan", out);
      output_locations.emplace_back(out, *loc);
    }
    // Scratch offsets are known per kernel before the pool exists: compile against a
    // null base, then bind every scratch location once the pool is allocated.
    for (const auto& pk : p.kernels) kernels.push_back(compile(pk));
    std::set<std::string> plain_only(g.outputs.begin(), g.outputs.end());
    for (const auto& [alt, main] : alternatives) {
      if (plain_only.count(main)) plain_only.insert(alt);
    }
    for (const auto& t : options.boundary_nhwc) plain_only.erase(t);
    build_linear_ops(choose_channels_last(plain_only));
    scratch = static_cast<std::byte*>(
        std::aligned_alloc(64, static_cast<std::size_t>((scratch_peak + 63) / 64 * 64 + 64)));
    stats.scratch_bytes = scratch_peak;
    layout_pool = static_cast<std::byte*>(
        std::aligned_alloc(64, static_cast<std::size_t>((layout_peak + 63) / 64 * 64 + 64)));
    stats.layout_bytes = layout_peak;
    for (auto& stages : kernels) {
      for (auto& st : stages) {
        if (st.reference) bind_views(*st.reference);
        if (st.linear) bind_layout_buffers(st.linear->op);
      }
    }
  }
  ~Impl() {
    std::free(arena);
    std::free(scratch);
    std::free(layout_pool);
  }

  // Stages run one after another, so the reordered copies of every convolution share
  // one pool (source, result, operands, in that order).
  static std::int64_t aligned(std::int64_t bytes) { return (bytes + 63) / 64 * 64; }
  // The memories of `op` that live in the layout pool, in pool order.
  static std::vector<memory*> pooled(LinearOp& op) {
    std::vector<memory*> m;
    if (op.src_reorder) m.push_back(&op.src);
    if (op.dst_reorder) m.push_back(&op.dst);
    for (std::size_t i = 0; i < op.binary.size(); ++i) {
      if (op.binary_reorder[i]) m.push_back(&op.binary[i]);
    }
    return m;
  }
  static std::int64_t layout_bytes(LinearOp& op) {
    std::int64_t total = 0;
    for (memory* m : pooled(op))
      total += aligned(static_cast<std::int64_t>(m->get_desc().get_size()));
    return total;
  }
  void bind_layout_buffers(LinearOp& op) {
    std::int64_t off = 0;
    for (memory* m : pooled(op)) {
      m->set_data_handle(layout_pool + off);
      off += aligned(static_cast<std::int64_t>(m->get_desc().get_size()));
    }
  }

  std::optional<Location> locate_or_none(const std::string& t) const {
    Location l;
    if (graph.is_constant(t)) {
      l.kind = Location::Kind::Constant;
      l.constant = graph.tensor(t).data.get();
      return l;
    }
    if (auto it = input_index.find(t); it != input_index.end()) {
      l.kind = Location::Kind::Input;
      l.input = it->second;
      return l;
    }
    if (auto it = arena_offset.find(t); it != arena_offset.end()) {
      l.offset = it->second;
      return l;
    }
    return std::nullopt;
  }
  Location locate(const std::string& t) const {
    auto l = locate_or_none(t);
    if (!l) fail("plan executor: tensor '{}' is neither an input, a weight nor in the arena", t);
    return *l;
  }
  const std::byte* address(const Location& l) const {
    switch (l.kind) {
      case Location::Kind::Constant:
        return l.constant->raw();
      case Location::Kind::Input:
        return input_ptrs[l.input];
      case Location::Kind::Scratch:
        return scratch + l.offset;
      case Location::Kind::Arena:
        break;
    }
    return arena + l.offset;
  }
  std::byte* mutable_address(const Location& l) const {
    if (l.kind == Location::Kind::Scratch) return scratch + l.offset;
    if (l.kind != Location::Kind::Arena)
      fail("plan executor: writing a tensor that is not an activation");
    return arena + l.offset;
  }

  // Where each tensor of one kernel lives while compiling it.
  struct KernelLayout {
    std::unordered_map<std::string, Location> where;
    std::unordered_map<std::string, std::string> source;  // kernel input -> arena tensor
    std::int64_t scratch_used = 0;
    std::string arena_name(const std::string& t) const {
      auto it = source.find(t);
      return it == source.end() ? t : it->second;
    }
  };

  // The tensors that stay in NHWC between convolutions: written by a convolution that
  // runs NHWC, read only by such convolutions (as source or as a full-size binary
  // post-op operand, e.g. a residual), and not a graph output. oneDNN's fast AVX-512
  // convolutions run channels-last; keeping their hand-offs channels-last saves the two
  // reorders per convolution that plain NCHW arena tensors would cost.
  std::set<std::string> choose_channels_last(const std::set<std::string>& plain_only) {
    std::set<std::string> chosen, refused(plain_only);
    for (auto& stages : kernels) {
      for (Stage& st : stages) {
        if (!st.linear) {
          refused.insert(st.reads.begin(), st.reads.end());
          continue;
        }
        LinearStage& l = *st.linear;
        refused.insert(l.wei);  // weights are read plain
        l.prefers_nhwc = l.node->op_type == "Conv" && conv_prefers_nhwc(engine, graph, *l.node);
        if (!l.prefers_nhwc) {
          refused.insert(l.src);
          refused.insert(l.dst);
          for (const auto& po : l.post_ops) refused.insert(po.operand);
          continue;
        }
        chosen.insert(l.dst);
        const Shape& out = graph.tensor(l.dst).shape;
        auto boundary = [&](const std::string& t) {
          return input_index.count(t) && options.boundary_nhwc.count(t);
        };
        if (boundary(l.src)) chosen.insert(l.src);
        for (const auto& po : l.post_ops) {
          if (po.kind != PostOp::Kind::Binary) continue;
          if (graph.tensor(po.operand).shape != out) {
            refused.insert(po.operand);
          } else if (boundary(po.operand)) {
            chosen.insert(po.operand);
          }
        }
      }
    }
    std::set<std::string> result;
    for (const auto& t : chosen) {
      if (!refused.count(t)) result.insert(t);
    }
    return result;
  }

  void build_linear_ops(const std::set<std::string>& nhwc) {
    for (auto& stages : kernels) {
      for (Stage& st : stages) {
        if (!st.linear) continue;
        LinearStage& l = *st.linear;
        LinearLayout layout;
        layout.nhwc = l.prefers_nhwc;
        layout.src_stored_nhwc = nhwc.count(l.src) > 0;
        layout.dst_stored_nhwc = nhwc.count(l.dst) > 0;
        for (const auto& po : l.post_ops) {
          const bool binary = po.kind == PostOp::Kind::Binary;
          layout.operand_stored_nhwc.push_back(binary && nhwc.count(po.operand) > 0);
          layout.operand_used_nhwc.push_back(binary && l.prefers_nhwc &&
                                             graph.tensor(po.operand).shape ==
                                                 graph.tensor(l.dst).shape);
        }
        l.op = make_linear(engine, stream, graph, *l.node, l.post_ops, layout);
        layout_peak = std::max(layout_peak, layout_bytes(l.op));
        if (l.op.packed_weights) {
          stats.packed_weight_bytes += static_cast<std::int64_t>(l.op.wei.get_desc().get_size());
        }
        if (l.op.src_reorder || l.op.dst_reorder || layout.nhwc) ++stats.blocked_convolutions;
        stats.nhwc_handoffs += layout.src_stored_nhwc;
      }
    }
  }

  Location place(KernelLayout& layout, const std::string& t) {
    if (auto it = layout.where.find(t); it != layout.where.end()) return it->second;
    if (auto known = locate_or_none(t)) {  // a weight, graph input or kernel output
      layout.where[t] = *known;
      return *known;
    }
    Location l;
    l.kind = Location::Kind::Scratch;
    l.offset = layout.scratch_used;
    layout.scratch_used += (tensor_bytes(graph, t) + 63) / 64 * 64;
    scratch_peak = std::max(scratch_peak, layout.scratch_used);
    layout.where[t] = l;
    return l;
  }

  // The tensors produced by nodes[begin, end) that a later node of the kernel or
  // something outside the kernel reads.
  std::set<std::string> needed_after(const PlannedKernel& pk, std::size_t begin,
                                     std::size_t end) const {
    std::set<std::string> produced, needed;
    for (std::size_t i = begin; i < end; ++i) {
      for (const auto& o : graph.nodes[pk.nodes[i]].outputs) produced.insert(o);
    }
    for (std::size_t i = 0; i < pk.nodes.size(); ++i) {
      if (i >= begin && i < end) continue;
      for (const auto& t : graph.nodes[pk.nodes[i]].inputs) {
        if (produced.count(t)) needed.insert(t);
      }
    }
    for (const auto& t : pk.outputs) {
      if (produced.count(t)) needed.insert(t);
    }
    return needed;
  }

  // How many inputs of nodes[from..] of the kernel read `t`.
  std::size_t readers_from(const PlannedKernel& pk, std::size_t from, const std::string& t) const {
    std::size_t readers = 0;
    for (std::size_t i = from; i < pk.nodes.size(); ++i) {
      for (const auto& in : graph.nodes[pk.nodes[i]].inputs) readers += in == t;
    }
    return readers;
  }

  // An activation that fission spelled as several primitives, starting at nodes[at] and
  // reading `chain`, as one oneDNN eltwise post-op, with the number of nodes it covers:
  //   swish  x * Sigmoid(x)                                    (SiLU, YOLOX)
  //   gelu   x * (Erf(x / sqrt 2) + 1) * 0.5  or  Erf(x * (1 / sqrt 2))  (BERT, ViT)
  // Only when the pattern's nodes follow each other in the kernel, `chain` has no other
  // reader and no intermediate is needed elsewhere.
  std::optional<std::pair<PostOp, std::size_t>> composite_post_op(const PlannedKernel& pk,
                                                                  std::size_t pos, std::size_t at,
                                                                  const std::string& chain) const {
    auto node = [&](std::size_t k) -> const Node* {
      return at + k < pk.nodes.size() ? &graph.nodes[pk.nodes[at + k]] : nullptr;
    };
    auto is = [&](const Node* n, const char* op, std::size_t inputs) {
      return n && n->op_type == op && n->inputs.size() == inputs && n->outputs.size() == 1 &&
             is_f32(graph, n->outputs[0]) &&
             graph.tensor(n->outputs[0]).shape == graph.tensor(chain).shape;
    };
    auto other_of = [](const Node* n, const std::string& t) -> std::optional<std::string> {
      if (n->inputs[0] == t) return n->inputs[1];
      if (n->inputs[1] == t) return n->inputs[0];
      return std::nullopt;
    };
    auto scalar_near = [&](const std::string& t, double want) {
      const auto v = constant_scalar(graph, t);
      return v && std::fabs(*v - want) <= 1e-4 * std::fabs(want);
    };
    // Accepts the pattern if it covers `count` nodes and only its last output is needed
    // after it, and `chain` is read `chain_reads` times, all inside it.
    auto accept = [&](std::size_t count, std::size_t chain_reads) {
      const std::set<std::string> needed = needed_after(pk, pos, at + count);
      const std::string& last = graph.nodes[pk.nodes[at + count - 1]].outputs[0];
      return needed.size() == 1 && needed.count(last) && readers_from(pk, at, chain) == chain_reads;
    };
    auto eltwise = [](dnnl::algorithm a, float alpha) {
      return PostOp{PostOp::Kind::Eltwise, a, alpha, 0, {}};
    };
    const Node* n0 = node(0);
    const Node* n1 = node(1);
    if (is(n0, "Sigmoid", 1) && n0->inputs[0] == chain && is(n1, "Mul", 2) &&
        other_of(n1, chain) == n0->outputs[0] && accept(2, 2)) {
      return std::make_pair(eltwise(dnnl::algorithm::eltwise_swish, 1.0f), std::size_t{2});
    }
    // gelu: scale -> Erf -> Add 1 -> Mul by x -> Mul 0.5
    const Node* n2 = node(2);
    const Node* n3 = node(3);
    const Node* n4 = node(4);
    if (!(n0 && n0->inputs.size() == 2 && n0->inputs[0] == chain)) return std::nullopt;
    const bool scaled = (is(n0, "Div", 2) && scalar_near(n0->inputs[1], std::sqrt(2.0))) ||
                        (is(n0, "Mul", 2) && scalar_near(n0->inputs[1], 1.0 / std::sqrt(2.0)));
    if (!scaled || !is(n1, "Erf", 1) || n1->inputs[0] != n0->outputs[0]) return std::nullopt;
    if (!is(n2, "Add", 2)) return std::nullopt;
    const auto one = other_of(n2, n1->outputs[0]);
    if (!one || !scalar_near(*one, 1.0)) return std::nullopt;
    if (!is(n3, "Mul", 2) || other_of(n3, chain) != n2->outputs[0]) return std::nullopt;
    if (!is(n4, "Mul", 2)) return std::nullopt;
    const auto half = other_of(n4, n3->outputs[0]);
    if (!half || !scalar_near(*half, 0.5) || !accept(5, 2)) return std::nullopt;
    return std::make_pair(eltwise(dnnl::algorithm::eltwise_gelu_erf, 0.0f), std::size_t{5});
  }

  // A linear node at `pos` with the elementwise epilogue that follows it; returns the
  // stage and how many nodes it covers, or nullopt.
  std::optional<std::pair<LinearStage, std::size_t>> linear_stage(const PlannedKernel& pk,
                                                                  std::size_t pos,
                                                                  KernelLayout& layout) {
    const Node& lin = graph.nodes[pk.nodes[pos]];
    if (lin.op_type != "MatMul" && lin.op_type != "Conv") return std::nullopt;
    for (const auto& t : lin.inputs) {
      if (graph.tensor(t).shape.size() < 2) return std::nullopt;
    }
    std::set<std::string> internal;
    std::vector<PostOp> post_ops;
    std::string chain = lin.outputs[0];
    const Shape& out_shape = graph.tensor(chain).shape;
    std::size_t end = pos + 1;
    while (end < pk.nodes.size()) {
      // The running value must feed only the next node(s) and stay inside the kernel.
      const std::set<std::string> needed = needed_after(pk, pos, end);
      if (needed.size() != 1 || !needed.count(chain)) break;
      if (std::find(pk.outputs.begin(), pk.outputs.end(), chain) != pk.outputs.end()) break;
      if (auto composite = composite_post_op(pk, pos, end, chain)) {
        post_ops.push_back(composite->first);
        internal.insert(chain);
        chain = graph.nodes[pk.nodes[end + composite->second - 1]].outputs[0];
        end += composite->second;
        continue;
      }
      const Node& n = graph.nodes[pk.nodes[end]];
      if (readers_from(pk, end, chain) != 1) break;
      internal.insert(chain);
      auto po = as_post_op(graph, n, chain, out_shape, internal);
      if (!po) break;
      post_ops.push_back(*po);
      chain = n.outputs[0];
      ++end;
    }
    if (!linear_supported(graph, lin)) return std::nullopt;
    LinearStage st;
    st.node = &lin;
    st.src = layout.arena_name(lin.inputs[0]);
    st.wei = layout.arena_name(lin.inputs[1]);
    st.dst = chain;
    st.a = place(layout, lin.inputs[0]);
    st.b = place(layout, lin.inputs[1]);
    st.y = place(layout, chain);
    for (auto p : post_ops) {
      if (p.kind != PostOp::Kind::Binary) continue;
      st.extra.push_back(place(layout, p.operand));
    }
    for (auto& p : post_ops) {
      if (p.kind == PostOp::Kind::Binary) p.operand = layout.arena_name(p.operand);
    }
    st.post_ops = std::move(post_ops);
    st.extra_ptrs.resize(st.extra.size());
    return std::make_pair(std::move(st), end - pos);
  }

  std::optional<LoopStage> loop_stage(const PlannedKernel& pk, std::size_t begin, std::size_t end,
                                      KernelLayout& layout) {
    const std::vector<std::size_t> nodes(pk.nodes.begin() + static_cast<std::ptrdiff_t>(begin),
                                         pk.nodes.begin() + static_cast<std::ptrdiff_t>(end));
    std::string why;
    auto loop = FusedLoop::compile(graph, nodes, needed_after(pk, begin, end), &why);
    if (!loop) return std::nullopt;
    LoopStage st;
    for (const auto& t : loop->reads()) st.reads.push_back(place(layout, t));
    for (const auto& t : loop->writes()) st.writes.push_back(place(layout, t));
    st.read_ptrs.resize(st.reads.size());
    st.write_ptrs.resize(st.writes.size());
    stats.loop_scratch_bytes += loop->scratch_bytes();
    st.loop = std::move(loop);
    return st;
  }

  ReferenceStage reference_stage(const Node& n, KernelLayout& layout) {
    ReferenceStage st;
    st.node = &n;
    st.kernel = find_reference_kernel(n.op_type);
    if (!st.kernel) unsupported("{}: no kernel for op type '{}'", n.describe(), n.op_type);
    st.in_views.reserve(n.inputs.size());
    for (const auto& t : n.inputs) {
      if (t.empty()) continue;
      const Location l = place(layout, t);
      if (l.kind == Location::Kind::Constant) continue;
      const TensorInfo& info = graph.tensor(t);
      st.in_views.push_back(Tensor::view(info.dtype, info.shape, nullptr));
      st.in_locations.push_back(l);
    }
    for (const auto& t : n.outputs) {
      const TensorInfo& info = graph.tensor(t);
      st.out_views.push_back(Tensor::view(info.dtype, info.shape, nullptr));
      st.out_locations.push_back(place(layout, t));
    }
    st.in_constants.resize(n.inputs.size(), nullptr);
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      if (!n.inputs[i].empty() && graph.is_constant(n.inputs[i])) {
        st.in_constants[i] = graph.tensor(n.inputs[i]).data.get();
      }
    }
    return st;
  }

  // Points the reference stage's views at their memory (arena and scratch are fixed;
  // graph inputs are rebound per execute()).
  void bind_views(ReferenceStage& st) {
    st.ins.assign(st.node->inputs.size(), nullptr);
    std::size_t v = 0;
    for (std::size_t i = 0; i < st.node->inputs.size(); ++i) {
      if (st.node->inputs[i].empty()) continue;
      if (st.in_constants[i]) {
        st.ins[i] = st.in_constants[i];
        continue;
      }
      const Location& l = st.in_locations[v];
      if (l.kind != Location::Kind::Input) {
        st.in_views[v].rebind(const_cast<std::byte*>(address(l)));
      } else {
        st.rebound.emplace_back(v, l.input);
      }
      st.ins[i] = &st.in_views[v];
      ++v;
    }
    for (std::size_t o = 0; o < st.out_views.size(); ++o) {
      st.out_views[o].rebind(mutable_address(st.out_locations[o]));
    }
  }

  Stage reference(const Node& n, KernelLayout& layout) {
    std::vector<std::string> reads;
    for (const auto& t : n.inputs) {
      if (!t.empty()) reads.push_back(layout.arena_name(t));
    }
    std::optional<UnaryDnnlOp> op = make_pool(engine, graph, n);
    if (!op) op = make_resample(engine, graph, n);
    if (op) {
      ++stats.dnnl_primitives;
      UnaryDnnlStage ps{std::move(*op), place(layout, n.inputs[0]), place(layout, n.outputs[0])};
      return Stage{std::nullopt, std::nullopt, std::nullopt, std::move(ps), std::move(reads)};
    }
    ++stats.reference_primitives;
    return Stage{std::nullopt, std::nullopt, reference_stage(n, layout), std::nullopt,
                 std::move(reads)};
  }

  std::vector<Stage> compile(const PlannedKernel& pk) {
    KernelLayout layout;
    for (std::size_t i = 0; i < pk.inputs.size(); ++i) {
      layout.where[pk.inputs[i]] = locate(pk.sources[i]);
      layout.source[pk.inputs[i]] = pk.sources[i];
    }
    std::vector<Stage> stages;
    std::size_t pos = 0;
    const std::size_t count = pk.nodes.size();
    auto is_linear = [&](std::size_t i) {
      return primitive_class(graph.nodes[pk.nodes[i]]) == PrimitiveClass::Linear;
    };
    while (pos < count) {
      if (is_linear(pos)) {
        if (auto st = linear_stage(pk, pos, layout)) {
          stats.dnnl_primitives += 1;
          stats.epilogue_primitives += st->second - 1;
          stages.push_back(
              Stage{std::move(st->first), std::nullopt, std::nullopt, std::nullopt, {}});
          pos += st->second;
          continue;
        }
        stages.push_back(reference(graph.nodes[pk.nodes[pos]], layout));
        ++pos;
        continue;
      }
      // The longest run of memory-bound primitives from here that one loop expresses.
      std::size_t run_end = pos;
      while (run_end < count && !is_linear(run_end)) ++run_end;
      bool placed = false;
      for (std::size_t end = run_end; end > pos; --end) {
        if (auto st = loop_stage(pk, pos, end, layout)) {
          stats.fused_loop_primitives += end - pos;
          ++stats.fused_loops;
          std::vector<std::string> reads;
          for (const auto& t : st->loop->reads()) reads.push_back(layout.arena_name(t));
          stages.push_back(
              Stage{std::nullopt, std::move(*st), std::nullopt, std::nullopt, std::move(reads)});
          pos = end;
          placed = true;
          break;
        }
      }
      if (placed) continue;
      stages.push_back(reference(graph.nodes[pk.nodes[pos]], layout));
      ++pos;
    }
    if (stages.size() == 1 && stages[0].linear) ++stats.fused_linear_kernels;
    if (stages.size() == 1 && stages[0].loop) ++stats.single_loop_kernels;
    return stages;
  }

  void run_stage(Stage& st) {
    if (st.linear) {
      LinearStage& l = *st.linear;
      for (std::size_t i = 0; i < l.extra.size(); ++i) l.extra_ptrs[i] = address(l.extra[i]);
      l.op.run(stream, address(l.a), address(l.b), mutable_address(l.y), l.extra_ptrs);
      stream.wait();
      return;
    }
    if (st.unary) {
      UnaryDnnlStage& p = *st.unary;
      p.op.src.set_data_handle(const_cast<std::byte*>(address(p.x)));
      p.op.dst.set_data_handle(mutable_address(p.y));
      p.op.prim.execute(stream, p.op.args);
      stream.wait();
      return;
    }
    if (st.loop) {
      LoopStage& l = *st.loop;
      for (std::size_t i = 0; i < l.reads.size(); ++i) l.read_ptrs[i] = address(l.reads[i]);
      for (std::size_t i = 0; i < l.writes.size(); ++i) {
        l.write_ptrs[i] = mutable_address(l.writes[i]);
      }
      l.loop->run(l.read_ptrs, l.write_ptrs);
      return;
    }
    ReferenceStage& r = *st.reference;
    for (const auto& [view, input] : r.rebound) {
      r.in_views[view].rebind(const_cast<std::byte*>(input_ptrs[input]));
    }
    r.kernel(*r.node, r.ins, r.out_views);
  }

  void bind_inputs(const TensorMap& inputs) {
    for (std::size_t i = 0; i < graph.inputs.size(); ++i) {
      auto it = inputs.find(graph.inputs[i]);
      if (it == inputs.end()) fail("plan executor: input '{}' is missing", graph.inputs[i]);
      const TensorInfo& info = graph.tensor(graph.inputs[i]);
      if (it->second.shape() != info.shape || it->second.dtype() != info.dtype) {
        fail("plan executor: input '{}' has the wrong dtype or shape", graph.inputs[i]);
      }
      input_ptrs[i] = it->second.raw();
    }
  }
  void execute(const TensorMap& inputs) {
    bind_inputs(inputs);
    for (auto& stages : kernels) {
      for (Stage& st : stages) run_stage(st);
    }
  }
  std::vector<double> execute_timed(const TensorMap& inputs) {
    bind_inputs(inputs);
    std::vector<double> us;
    us.reserve(kernels.size());
    for (auto& stages : kernels) {
      const auto start = std::chrono::steady_clock::now();
      for (Stage& st : stages) run_stage(st);
      us.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count());
    }
    return us;
  }
  std::string describe_kernel(std::size_t k) const {
    std::string ops, how;
    for (std::size_t n : plan.kernels.at(k).nodes) {
      ops += (ops.empty() ? "" : "+") + graph.nodes[n].op_type;
    }
    for (const Stage& st : kernels.at(k)) {
      if (!how.empty()) how += " | ";
      if (st.linear) {
        how += "onednn " + st.linear->op.implementation;
        if (st.linear->op.src_reorder) how += " (reorder in)";
        if (st.linear->op.dst_reorder) how += " (reorder out)";
      } else if (st.loop) {
        how += "fused loop";
      } else if (st.unary) {
        how += "onednn " + st.unary->op.implementation;
      } else {
        how += "reference " + st.reference->node->op_type;
      }
    }
    return ops + ": " + how;
  }

  TensorMap outputs() const {
    TensorMap out;
    for (const auto& [name, loc] : output_locations) {
      const TensorInfo& info = graph.tensor(name);
      Tensor t(info.dtype, info.shape);
      std::memcpy(t.raw(), address(loc), t.nbytes());
      out[name] = std::move(t);
    }
    return out;
  }
};

PlanExecutor::PlanExecutor(const Graph& graph, const Plan& plan,
                           const std::map<std::string, std::string>& alternatives,
                           const PlanExecutorOptions& options)
    : impl_(std::make_unique<Impl>(graph, plan, alternatives, options)) {}

PlanExecutor::~PlanExecutor() = default;

void PlanExecutor::execute(const TensorMap& inputs) {
  impl_->execute(inputs);
}

TensorMap PlanExecutor::outputs() const {
  return impl_->outputs();
}

const PlanExecutorStats& PlanExecutor::stats() const {
  return impl_->stats;
}

std::vector<double> PlanExecutor::execute_timed(const TensorMap& inputs) {
  return impl_->execute_timed(inputs);
}

std::string PlanExecutor::describe_kernel(std::size_t k) const {
  return impl_->describe_kernel(k);
}

}  // namespace orchid
