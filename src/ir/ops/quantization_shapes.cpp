// Shape functions of the quantization op family: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger.
// orchid's quantized tensors are int8 and uint8 (int32 for biases and accumulators);
// int4/int16/float8 forms are refused by name.
#include <fmt/format.h>

#include "ir/ops/op_families.hpp"
#include "ir/ops/quantization_params.hpp"

namespace orchid {

namespace {

constexpr std::initializer_list<DType> kQuant = {DType::I8, DType::U8};

// The dtype QuantizeLinear produces: its zero point's, else output_dtype (opset 21), else uint8.
DType quantized_dtype(const ShapeContext& ctx, std::size_t zero_point_input) {
  if (ctx.has_input(zero_point_input)) {
    ctx.require_dtype(zero_point_input, kQuant);
    return ctx.input_dtype(zero_point_input);
  }
  const std::int64_t to = ctx.node().attr_int("output_dtype", 0);
  if (to == 0 || to == 2) return DType::U8;
  if (to == 3) return DType::I8;
  ctx.unsupported("output_dtype {} (orchid quantizes to int8 and uint8 only)", to);
}

// The zero point, when given, has the scale's shape.
void check_zero_point(const ShapeContext& ctx, std::size_t scale, std::size_t zero_point) {
  if (!ctx.has_input(zero_point)) return;
  if (ctx.input_shape(zero_point) != ctx.input_shape(scale) &&
      !(shape_numel(ctx.input_shape(zero_point)) == 1 &&
        shape_numel(ctx.input_shape(scale)) == 1)) {
    ctx.fail("zero point of shape {} differs from its scale's shape {}",
             shape_to_string(ctx.input_shape(zero_point)), shape_to_string(ctx.input_shape(scale)));
  }
}

std::vector<TensorType> infer_quantize(const ShapeContext& ctx) {
  ctx.require_dtype(0, {DType::F32});
  ctx.require_dtype(1, {DType::F32});
  if (ctx.node().attr_int("saturate", 1) != 1) ctx.unsupported("saturate=0 (float8 only)");
  const DType out = quantized_dtype(ctx, 2);
  check_zero_point(ctx, 1, 2);
  quant_layout(ctx.node(), ctx.input_shape(0), ctx.input_shape(1));
  return {{out, ctx.input_shape(0)}};
}

std::vector<TensorType> infer_dequantize(const ShapeContext& ctx) {
  ctx.require_dtype(0, {DType::I8, DType::U8, DType::I32});
  ctx.require_dtype(1, {DType::F32});
  if (ctx.has_input(2) && ctx.input_dtype(2) != ctx.input_dtype(0)) {
    ctx.fail("zero point dtype {} differs from the data's {}", dtype_name(ctx.input_dtype(2)),
             dtype_name(ctx.input_dtype(0)));
  }
  if (ctx.node().attr_int("output_dtype", 0) > 1) {
    ctx.unsupported("output_dtype {} (orchid dequantizes to float32)",
                    ctx.node().attr_int("output_dtype", 0));
  }
  check_zero_point(ctx, 1, 2);
  quant_layout(ctx.node(), ctx.input_shape(0), ctx.input_shape(1));
  return {{DType::F32, ctx.input_shape(0)}};
}

std::vector<TensorType> infer_dynamic_quantize(const ShapeContext& ctx) {
  ctx.require_dtype(0, {DType::F32});
  return {{DType::U8, ctx.input_shape(0)}, {DType::F32, {}}, {DType::U8, {}}};
}

// A per-tensor parameter (one value), or one per index `count` (per row/column/channel).
void check_param(const ShapeContext& ctx, std::size_t i, const char* what,
                 std::initializer_list<DType> dtypes, std::int64_t count) {
  if (!ctx.has_input(i)) return;
  ctx.require_dtype(i, dtypes);
  const Shape& s = ctx.input_shape(i);
  const bool scalar = shape_numel(s) == 1 && s.size() <= 1;
  if (!scalar && !(count > 0 && s.size() == 1 && s[0] == count)) {
    ctx.fail("{} (input {}) has shape {}; expected a scalar{}", what, i, shape_to_string(s),
             count > 0 ? fmt::format(" or [{}]", count) : std::string());
  }
}

// Conv's output shape from the quantized operands, reusing Conv's own shape function.
TensorType conv_output(const ShapeContext& ctx, std::size_t x, std::size_t w) {
  const Shape& xs = ctx.input_shape(x);
  const Shape& ws = ctx.input_shape(w);
  Graph g;
  g.opset = ctx.opset();
  g.set_type("x", DType::F32, xs);
  g.set_type("w", DType::F32, ws);
  Node conv = ctx.node();
  conv.op_type = "Conv";
  conv.inputs = {"x", "w"};
  conv.outputs = {"y"};
  infer_node_types(g, conv);
  return {DType::I32, g.tensor("y").shape};
}

TensorType matmul_output(const ShapeContext& ctx, std::size_t a, std::size_t b) {
  Graph g;
  g.opset = ctx.opset();
  g.set_type("a", DType::F32, ctx.input_shape(a));
  g.set_type("b", DType::F32, ctx.input_shape(b));
  Node mm{ctx.node().name, "MatMul", "", {}, {"a", "b"}, {"y"}};
  infer_node_types(g, mm);
  return {DType::I32, g.tensor("y").shape};
}

std::int64_t rows_of(const Shape& s) {
  return s.size() >= 2 ? s[s.size() - 2] : 0;
}

std::int64_t cols_of(const Shape& s) {
  return s.size() >= 2 ? s.back() : 0;
}

// Output channels of a quantized Conv's weight `w`, once Conv's shape function has
// checked the operands (so `w` has the rank of a convolution weight).
std::int64_t conv_out_channels(const ShapeContext& ctx, std::size_t w) {
  const Shape& ws = ctx.input_shape(w);
  if (ws.empty()) ctx.fail("weight input {} is a scalar, expected [M, C/group, k...]", w);
  return ws[0];
}

std::vector<TensorType> infer_conv_integer(const ShapeContext& ctx) {
  ctx.require_dtype(0, kQuant);
  ctx.require_dtype(1, kQuant);
  const TensorType out = conv_output(ctx, 0, 1);
  check_param(ctx, 2, "x_zero_point", {ctx.input_dtype(0)}, 0);
  check_param(ctx, 3, "w_zero_point", {ctx.input_dtype(1)}, conv_out_channels(ctx, 1));
  return {out};
}

std::vector<TensorType> infer_matmul_integer(const ShapeContext& ctx) {
  ctx.require_dtype(0, kQuant);
  ctx.require_dtype(1, kQuant);
  const TensorType out = matmul_output(ctx, 0, 1);
  check_param(ctx, 2, "a_zero_point", {ctx.input_dtype(0)}, rows_of(ctx.input_shape(0)));
  check_param(ctx, 3, "b_zero_point", {ctx.input_dtype(1)}, cols_of(ctx.input_shape(1)));
  return {out};
}

std::vector<TensorType> infer_qlinear_conv(const ShapeContext& ctx) {
  // x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B
  ctx.require_dtype(0, kQuant);
  ctx.require_dtype(3, kQuant);
  TensorType out = conv_output(ctx, 0, 3);
  const std::int64_t m = conv_out_channels(ctx, 3);
  check_param(ctx, 1, "x_scale", {DType::F32}, 0);
  check_param(ctx, 2, "x_zero_point", {ctx.input_dtype(0)}, 0);
  check_param(ctx, 4, "w_scale", {DType::F32}, m);
  check_param(ctx, 5, "w_zero_point", {ctx.input_dtype(3)}, m);
  check_param(ctx, 6, "y_scale", {DType::F32}, 0);
  check_param(ctx, 7, "y_zero_point", kQuant, 0);
  if (ctx.has_input(8)) {
    ctx.require_dtype(8, {DType::I32});
    if (ctx.input_shape(8) != Shape{m}) {
      ctx.fail("bias B has shape {}, expected [{}]", shape_to_string(ctx.input_shape(8)), m);
    }
  }
  out.dtype = ctx.has_input(7) ? ctx.input_dtype(7) : DType::U8;
  return {out};
}

std::vector<TensorType> infer_qlinear_matmul(const ShapeContext& ctx) {
  // a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point
  ctx.require_dtype(0, kQuant);
  ctx.require_dtype(3, kQuant);
  TensorType out = matmul_output(ctx, 0, 3);
  const std::int64_t rows = rows_of(ctx.input_shape(0));
  const std::int64_t cols = cols_of(ctx.input_shape(3));
  check_param(ctx, 1, "a_scale", {DType::F32}, rows);
  check_param(ctx, 2, "a_zero_point", {ctx.input_dtype(0)}, rows);
  check_param(ctx, 4, "b_scale", {DType::F32}, cols);
  check_param(ctx, 5, "b_zero_point", {ctx.input_dtype(3)}, cols);
  check_param(ctx, 6, "y_scale", {DType::F32}, 0);
  check_param(ctx, 7, "y_zero_point", kQuant, 0);
  out.dtype = ctx.has_input(7) ? ctx.input_dtype(7) : DType::U8;
  return {out};
}

}  // namespace

void register_quantization_ops(OpSchemaTable& table) {
  table["ConvInteger"] = {"ConvInteger", 2, 4, 1, 1, infer_conv_integer};
  table["DequantizeLinear"] = {"DequantizeLinear", 2, 3, 1, 1, infer_dequantize};
  table["DynamicQuantizeLinear"] = {"DynamicQuantizeLinear", 1, 1, 3, 3, infer_dynamic_quantize};
  table["MatMulInteger"] = {"MatMulInteger", 2, 4, 1, 1, infer_matmul_integer};
  table["QLinearConv"] = {"QLinearConv", 8, 9, 1, 1, infer_qlinear_conv};
  table["QLinearMatMul"] = {"QLinearMatMul", 8, 8, 1, 1, infer_qlinear_matmul};
  table["QuantizeLinear"] = {"QuantizeLinear", 2, 3, 1, 1, infer_quantize};
}

}  // namespace orchid
