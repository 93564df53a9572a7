// Shape functions of the attention op family (opset 23): Attention (3D or 4D Q, K, V,
// attn_mask, is_causal, scale, softcap, grouped key/value heads) and RotaryEmbedding.
// The KV-cache inputs and outputs, nonpad_kv_seqlen and sliding windows are refused by
// name (ir/ops/attention_params.cpp).
#include "ir/ops/attention_params.hpp"
#include "ir/ops/op_families.hpp"

namespace orchid {

namespace {

constexpr std::initializer_list<DType> kFloat = {DType::F32, DType::F64};

std::vector<Shape> input_shapes(const ShapeContext& ctx) {
  std::vector<Shape> shapes(ctx.num_inputs());
  for (std::size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.has_input(i)) shapes[i] = ctx.input_shape(i);
  }
  return shapes;
}

std::vector<TensorType> infer_attention(const ShapeContext& ctx) {
  for (std::size_t i = 0; i < 3; ++i) ctx.require_dtype(i, kFloat);
  bool mask_is_bool = false;
  if (ctx.has_input(3)) {
    mask_is_bool = ctx.input_dtype(3) == DType::Bool;
    if (!mask_is_bool) ctx.require_dtype(3, kFloat);
  }
  const AttentionGeometry g = attention_geometry(ctx.node(), input_shapes(ctx), mask_is_bool);
  std::vector<TensorType> out(ctx.node().outputs.size(), {ctx.input_dtype(0), {}});
  out[0].shape = g.output_shape();
  return out;
}

std::vector<TensorType> infer_rotary_embedding(const ShapeContext& ctx) {
  for (std::size_t i = 0; i < 3; ++i) ctx.require_dtype(i, kFloat);
  if (ctx.has_input(3)) ctx.require_dtype(3, {DType::I64, DType::I32});
  rotary_geometry(ctx.node(), input_shapes(ctx));
  return {ctx.input(0)};
}

}  // namespace

void register_attention_ops(OpSchemaTable& table) {
  table["Attention"] = OpSchema{"Attention", 3, 7, 1, 4, infer_attention};
  table["RotaryEmbedding"] = OpSchema{"RotaryEmbedding", 3, 4, 1, 1, infer_rotary_embedding};
}

}  // namespace orchid
