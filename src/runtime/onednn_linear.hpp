// Linear primitives (MatMul, 2-D Conv) on oneDNN, with an epilogue folded in as post-ops.
//
// Memory objects are made once; each run only swaps their data handles. Convolutions run
// on NHWC activations (or oneDNN's own blocked choice where only that has a fast kernel) and
// the weight layout oneDNN prefers: where a tensor is stored otherwise (plain NCHW), the source is
// reordered from `src_user` into `src` before and the result from `dst` into `dst_user` after the
// convolution; constant
// weights are reordered once, at build time (`packed_weights`). oneDNN's channels-last
// kernels are several times faster than the im2col+GEMM path it takes for plain layouts,
// which is worth far more than the reorders.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "ir/graph.hpp"
#include "runtime/epilogue_matcher.hpp"
#include "runtime/packed_weights.hpp"

namespace orchid {

struct LinearOp {
  dnnl::primitive prim;
  dnnl::memory src, wei, dst;       // what the primitive reads and writes
  dnnl::memory src_user, dst_user;  // plain views of arena tensors when reorders are needed
  std::optional<dnnl::reorder> src_reorder, dst_reorder;
  bool packed_weights = false;                 // `wei` is a reordered copy of constant weights
  std::shared_ptr<const dnnl::memory> packed;  // that copy (runtime/packed_weights.hpp)
  // A first post-op adding a constant per output channel runs as the primitive's bias
  // (DNNL_ARG_BIAS, over this copy of its values); `binary` then holds the others.
  std::vector<float> bias_values;
  std::vector<dnnl::memory> binary;       // post-op src1 tensors, in post-op order
  std::vector<std::size_t> binary_extra;  // per `binary`: its operand's place in run()'s extra
  // The post-op that adds its operand as a sum: the operand is stored in the result's
  // buffer (in_place_residuals.hpp) and read from there.
  std::optional<std::size_t> sum_at;
  // Per binary post-op: a full-size operand stored plain for an NHWC convolution is
  // reordered into `binary[i]` first (oneDNN 2.6 reads such operands in the result's
  // layout whatever their descriptor says, so they must match it).
  std::vector<std::optional<dnnl::reorder>> binary_reorder;
  std::vector<dnnl::memory> binary_user;
  std::unordered_map<int, dnnl::memory> args;
  std::string implementation;  // oneDNN's name for the kernel it chose

  // a, b: source and weights; y: result; extra: binary post-op operands in order (the bias's
  // too, which is not read).
  void run(dnnl::stream& stream, const void* a, const void* b, void* y,
           const std::vector<const void*>& extra);
  // The memories that need a buffer of their own (reordered copies), in a fixed order.
  std::vector<dnnl::memory*> reordered_copies();
};

// The activation layouts a convolution runs on when oneDNN chooses them.
struct ConvLayouts {
  dnnl::memory::desc src, dst;
};

// How a linear op's activations are stored: which of its tensors live in the layout the
// convolution prefers rather than plain NCHW (cost/layout_policy.hpp decides).
struct LinearLayout {
  std::optional<ConvLayouts> preferred;  // the convolution runs on these layouts
  bool src_stored_preferred = false, dst_stored_preferred = false;
  std::vector<bool> operand_stored_preferred;  // per post-op
  std::vector<bool> operand_used_preferred;    // per post-op: full-size operand of such a conv
  std::vector<bool> operand_in_place;          // per post-op: stored in the result's buffer
};

// Whether make_linear maps `node` onto oneDNN: MatMul, or a 2-D Conv without bias input
// (fission splits the bias off), all f32.
bool linear_supported(const Graph& graph, const Node& node);

// The activation layouts this convolution runs on fast: NHWC where oneDNN has more than its
// reference kernel for it (AVX-512 and AVX2 alike), else the layouts oneDNN chooses itself,
// or nullopt when those are plain or need more bytes than plain (a blocked layout padding
// the channels). Tensors in such a layout pass between convolutions that agree on it
// without reorders.
std::optional<ConvLayouts> conv_preferred_layouts(const dnnl::engine& engine, const Graph& graph,
                                                  const Node& node);

// The layout oneDNN's convolutions prefer for an f32 activation of `dims` (N, C, H, W) on
// this CPU (asked of a C -> C 1x1 convolution), or nullopt where that is plain or needs
// more bytes: the layout pooling and resampling between convolutions run in.
std::optional<dnnl::memory::desc> activation_preferred_layout(const dnnl::engine& engine,
                                                              const dnnl::memory::dims& dims);

// Builds the primitive for a node linear_supported() accepts, with `post_ops`. Constant
// weights are packed into the layout the primitive prefers, or taken from `packing` where
// they already are. Convolutions choose
// their activation layout (any), or run on `layout.preferred`; activations stored
// otherwise are reordered before / after.
LinearOp make_linear(const dnnl::engine& engine, dnnl::stream& stream, const Graph& graph,
                     const Node& node, const std::vector<PostOp>& post_ops,
                     const LinearLayout& layout, PackedWeights& packing);

// oneDNN's algorithm for an IR-level one (InternalError for None).
dnnl::algorithm to_dnnl(OnednnAlgorithm algorithm);

}  // namespace orchid
