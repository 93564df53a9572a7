// QuantizeLinear and DequantizeLinear as float elementwise primitives, so QDQ models run
// wherever float primitives do (the quantized values are exact small integers in f32):
//   Q:  y = Cast(Clip(Round(x / s) + zp, lo, hi))            (lo, hi: the int8/uint8 range)
//   DQ: y = (Cast(x, f32) - zp) * s
// A DequantizeLinear that reads a QuantizeLinear's output reads the float value before
// its Cast instead (the QDQ pair stays in float; the Cast then has no reader and is
// dropped). Weights (constant Q/DQ inputs) fold to constants, so Conv and MatMul between
// QDQ pairs are plain linear primitives on dequantized operands: fp32 compute, stated in
// docs/quantized_recurrent.md. The integer linear ops (QLinearConv, QLinearMatMul,
// ConvInteger, MatMulInteger) and DynamicQuantizeLinear likewise become float
// primitives. Scales and zero points must be constants.
#include <algorithm>
#include <limits>

#include "eval/reference_interpreter.hpp"
#include "fission/qdq_linear.hpp"
#include "fission/rule.hpp"
#include "ir/ops/quantization_params.hpp"

namespace orchid::fission_detail {

namespace {

// Scale or zero point of a Q/DQ node as an f32 constant shaped to broadcast against the
// data (per tensor: a scalar; per axis: [C, 1, ...] aligned at the axis).
std::string broadcast_param(RuleContext& ctx, const std::string& data, std::size_t input,
                            const char* what) {
  const Tensor* value = ctx.constant_value(ctx.input(input));
  if (!value) ctx.unsupported(fmt::format("input {} ({}) is computed at run time", input, what));
  const Shape& data_shape = ctx.model_shape(data);
  const QuantLayout q = quant_layout(ctx.node(), data_shape, value->shape());
  Tensor f = value->cast(DType::F32);
  if (q.kind == QuantLayout::Kind::Blocked) {
    ctx.unsupported("blocked quantization (block_size) of a tensor computed at run time");
  }
  if (q.kind == QuantLayout::Kind::PerAxis) {
    Shape target(data_shape.size() - static_cast<std::size_t>(q.axis), 1);
    target[0] = q.axis_size;
    f = f.reshaped(target);
  } else {
    f = f.reshaped({});
  }
  return ctx.constant(what, f);
}

bool all_zero(const Tensor* t) {
  if (!t) return true;
  for (std::int64_t i = 0; i < t->numel(); ++i) {
    if (t->get_as_double(i) != 0.0) return false;
  }
  return true;
}

// A Q/DQ node of constants becomes the constant its reference kernel computes.
void fold_constant_node(RuleContext& ctx) {
  std::vector<const Tensor*> values;
  for (const auto& in : ctx.node().inputs) {
    values.push_back(in.empty() ? nullptr : ctx.constant_value(in));
  }
  std::vector<Tensor> result = run_reference_node(ctx.model(), ctx.node(), values);
  ctx.graph().set_constant(ctx.output(0), std::move(result.at(0)));
}

void quantize_linear(RuleContext& ctx) {
  const std::string x = ctx.input(0);
  const DType to = ctx.model().tensor(ctx.output(0)).dtype;
  if (ctx.constant_value(x)) {  // a weight: folded through the reference kernel
    fold_constant_node(ctx);
    return;
  }
  const std::string s = broadcast_param(ctx, x, 1, "scale");
  std::string v = ctx.emit("Round", {ctx.emit("Div", {x, s}, {}, "div")}, {}, "round");
  if (ctx.node().has_input(2) && !all_zero(ctx.constant_value(ctx.input(2)))) {
    v = ctx.emit("Add", {v, broadcast_param(ctx, x, 2, "zero_point")}, {}, "zero_point");
  }
  const bool is_signed = to == DType::I8;
  v = ctx.emit("Clip",
               {v, ctx.scalar("lo", is_signed ? -128.0 : 0.0, DType::F32),
                ctx.scalar("hi", is_signed ? 127.0 : 255.0, DType::F32)},
               {}, "saturate");
  ctx.state().quantized_as_float[ctx.output(0)] = v;
  // The integer tensor itself only when something besides a DequantizeLinear reads it.
  const std::string& y = ctx.output(0);
  bool needed = std::find(ctx.model().outputs.begin(), ctx.model().outputs.end(), y) !=
                ctx.model().outputs.end();
  for (const Node& n : ctx.state().nodes) {
    if (n.op_type != "DequantizeLinear" &&
        std::find(n.inputs.begin(), n.inputs.end(), y) != n.inputs.end()) {
      needed = true;
    }
  }
  if (needed) ctx.cast(v, to, "", y);
}

void dequantize_linear(RuleContext& ctx) {
  const std::string x = ctx.input(0);
  const auto& floats = ctx.state().quantized_as_float;
  const auto it = floats.find(x);
  if (it == floats.end() && ctx.constant_value(x)) {  // a weight (make_static keeps these)
    fold_constant_node(ctx);
    return;
  }
  std::string v = it != floats.end() ? it->second : ctx.cast(x, DType::F32, "to_float");
  if (ctx.node().has_input(2) && !all_zero(ctx.constant_value(ctx.input(2)))) {
    v = ctx.emit("Sub", {v, broadcast_param(ctx, x, 2, "zero_point")}, {}, "zero_point");
  }
  ctx.emit("Mul", {v, broadcast_param(ctx, x, 1, "scale")}, {}, "scale", ctx.output(0));
}

// A scale or zero point of the integer linear ops as an f32 constant of `shape` (a
// per-tensor value is a scalar; per-row/column/channel values are reshaped by the
// caller's `shape`); "" when the input is absent or all zero and `skip_zero` is set.
std::string linear_param(RuleContext& ctx, std::size_t input, const Shape& shape, const char* what,
                         bool skip_zero) {
  if (!ctx.node().has_input(input)) return "";
  const Tensor* value = ctx.constant_value(ctx.input(input));
  if (!value) ctx.unsupported(fmt::format("input {} ({}) is computed at run time", input, what));
  if (skip_zero && all_zero(value)) return "";
  Tensor f = value->cast(DType::F32);
  return ctx.constant(what, f.reshaped(value->numel() == 1 ? Shape{} : shape));
}

// (Cast(x) - zero_point) [* scale], in f32: exact small integers before the scale.
std::string centered_float(RuleContext& ctx, std::size_t x, std::size_t zero_point,
                           std::size_t scale, const Shape& param_shape, const std::string& what) {
  std::string v = ctx.cast(ctx.input(x), DType::F32, what + "_float");
  const std::string zp =
      linear_param(ctx, zero_point, param_shape, (what + "_zero_point").c_str(), true);
  if (!zp.empty()) v = ctx.emit("Sub", {v, zp}, {}, what + "_centered");
  if (scale != static_cast<std::size_t>(-1)) {
    v = ctx.emit("Mul",
                 {v, linear_param(ctx, scale, param_shape, (what + "_scale").c_str(), false)}, {},
                 what + "_dequantized");
  }
  return v;
}

constexpr std::size_t kNoScale = static_cast<std::size_t>(-1);

// [n, 1, ..., 1] of `rank` (per output channel of a weight or a Conv output).
Shape leading(std::int64_t n, std::size_t rank) {
  Shape s(rank, 1);
  s[0] = n;
  return s;
}

// Requantizes a float result: Cast(Clip(Round(y / y_scale) + y_zero_point)).
void requantize(RuleContext& ctx, const std::string& y, std::size_t y_scale, std::size_t y_zp) {
  const DType to = ctx.model().tensor(ctx.output(0)).dtype;
  std::string v = ctx.emit("Div", {y, linear_param(ctx, y_scale, {}, "y_scale", false)}, {}, "div");
  v = ctx.emit("Round", {v}, {}, "round");
  const std::string zp = linear_param(ctx, y_zp, {}, "y_zero_point", true);
  if (!zp.empty()) v = ctx.emit("Add", {v, zp}, {}, "zero_point");
  const bool is_signed = to == DType::I8;
  v = ctx.emit("Clip",
               {v, ctx.scalar("lo", is_signed ? -128.0 : 0.0, DType::F32),
                ctx.scalar("hi", is_signed ? 127.0 : 255.0, DType::F32)},
               {}, "saturate");
  ctx.cast(v, to, "", ctx.output(0));
}

// The integer linear ops compute in f32 on centered integer operands: products and sums
// stay exact while |sum| < 2^24 (e.g. any K <= 258 at full int8 range), and QLinear*
// round once from the float product where the reference rounds acc * multiplier, so a
// value on a rounding boundary may land one step away.
void matmul_integer(RuleContext& ctx) {
  const Shape& a = ctx.shape(ctx.input(0));
  const Shape& b = ctx.shape(ctx.input(1));
  const std::int64_t rows = a.size() >= 2 ? a[a.size() - 2] : 1;
  const std::int64_t cols = b.size() >= 2 ? b.back() : 1;
  const std::string af = centered_float(ctx, 0, 2, kNoScale, {rows, 1}, "a");
  const std::string bf = centered_float(ctx, 1, 3, kNoScale, {cols}, "b");
  ctx.cast(ctx.emit("MatMul", {af, bf}, {}, "matmul"), DType::I32, "", ctx.output(0));
}

// QLinearConv / QLinearMatMul that oneDNN's int8 kernels compute stay one int8 linear
// primitive; the rest become float primitives below.
bool keep_int8_linear(RuleContext& ctx) {
  std::string why;
  if (!int8_linear_eligible(
          ctx.node(),
          [&](const std::string& t) { return t.empty() ? nullptr : ctx.constant_value(t); },
          [&](const std::string& t) -> const Shape& { return ctx.shape(t); }, why)) {
    return false;
  }
  ctx.pass_through();
  return true;
}

void qlinear_matmul(RuleContext& ctx) {
  if (keep_int8_linear(ctx)) return;
  const Shape& a = ctx.shape(ctx.input(0));
  const Shape& b = ctx.shape(ctx.input(3));
  const std::int64_t rows = a.size() >= 2 ? a[a.size() - 2] : 1;
  const std::int64_t cols = b.size() >= 2 ? b.back() : 1;
  const std::string af = centered_float(ctx, 0, 2, 1, {rows, 1}, "a");
  const std::string bf = centered_float(ctx, 3, 5, 4, {cols}, "b");
  requantize(ctx, ctx.emit("MatMul", {af, bf}, {}, "matmul"), 6, 7);
}

std::map<std::string, Attribute> conv_attributes(const Node& node) {
  return node.attributes;  // Conv's attributes, as ConvInteger/QLinearConv carry them
}

void conv_integer(RuleContext& ctx) {
  const Shape& w = ctx.shape(ctx.input(1));
  const std::string xf = centered_float(ctx, 0, 2, kNoScale, {}, "x");
  const std::string wf = centered_float(ctx, 1, 3, kNoScale, leading(w[0], w.size()), "w");
  ctx.cast(ctx.emit("Conv", {xf, wf}, conv_attributes(ctx.node()), "conv"), DType::I32, "",
           ctx.output(0));
}

void qlinear_conv(RuleContext& ctx) {
  if (keep_int8_linear(ctx)) return;
  const Shape& w = ctx.shape(ctx.input(3));
  const std::string xf = centered_float(ctx, 0, 2, 1, {}, "x");
  const std::string wf = centered_float(ctx, 3, 5, 4, leading(w[0], w.size()), "w");
  std::string y = ctx.emit("Conv", {xf, wf}, conv_attributes(ctx.node()), "conv");
  if (ctx.node().has_input(8)) {  // int32 bias in units of x_scale * w_scale
    const Shape channel = leading(w[0], w.size() - 1);
    std::string bias = ctx.cast(ctx.input(8), DType::F32, "bias_float");
    bias = ctx.reshape(bias, channel, "bias_c11");
    bias = ctx.emit("Mul", {bias, linear_param(ctx, 1, {}, "bias_x_scale", false)}, {}, "bias_x");
    bias = ctx.emit("Mul", {bias, linear_param(ctx, 4, channel, "bias_w_scale", false)}, {},
                    "bias_scaled");
    y = ctx.emit("Add", {y, bias}, {}, "bias");
  }
  requantize(ctx, y, 6, 7);
}

// scale = (max(x, 0) - min(x, 0)) / 255, zero point = saturate(round(-min / scale)),
// y = saturate(round(x / scale) + zero point); divisions use max(scale, FLT_MIN) so an
// all-zero input gives scale 0, zero point 0 and y 0, as the reference does.
void dynamic_quantize_linear(RuleContext& ctx) {
  const std::string x = ctx.input(0);
  std::vector<std::int64_t> axes(static_cast<std::size_t>(ctx.rank(x)));
  for (std::size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<std::int64_t>(i);
  const std::string zero = ctx.scalar("zero", 0.0, DType::F32);
  std::string lo = zero, hi = zero;
  if (!axes.empty()) {
    lo = ctx.emit("Min", {ctx.reduce("ReduceMin", x, axes, false, "min"), zero}, {}, "lo");
    hi = ctx.emit("Max", {ctx.reduce("ReduceMax", x, axes, false, "max"), zero}, {}, "hi");
  } else {
    lo = ctx.emit("Min", {x, zero}, {}, "lo");
    hi = ctx.emit("Max", {x, zero}, {}, "hi");
  }
  const std::string scale = ctx.emit(
      "Div", {ctx.emit("Sub", {hi, lo}, {}, "range"), ctx.scalar("levels", 255.0, DType::F32)}, {},
      "scale", ctx.output(1));
  const std::string safe =
      ctx.emit("Max", {scale, ctx.scalar("tiny", std::numeric_limits<float>::min(), DType::F32)},
               {}, "safe_scale");
  const std::string l255 = ctx.scalar("max_level", 255.0, DType::F32);
  auto saturate = [&](const std::string& v, const std::string& what) {
    return ctx.emit("Clip", {v, zero, l255}, {}, what);
  };
  const std::string zp = saturate(
      ctx.emit("Round",
               {ctx.emit("Div", {ctx.emit("Sub", {zero, lo}, {}, "neg_lo"), safe}, {}, "zp_div")},
               {}, "zp_round"),
      "zp");
  const std::string q = saturate(
      ctx.emit("Add", {ctx.emit("Round", {ctx.emit("Div", {x, safe}, {}, "div")}, {}, "round"), zp},
               {}, "shift"),
      "saturate");
  ctx.cast(q, DType::U8, "", ctx.output(0));
  if (!ctx.output(2).empty()) ctx.cast(zp, DType::U8, "zp_u8", ctx.output(2));
}

}  // namespace

void register_quantization_rules(RuleTable& table) {
  table["ConvInteger"] = conv_integer;
  table["DequantizeLinear"] = dequantize_linear;
  table["DynamicQuantizeLinear"] = dynamic_quantize_linear;
  table["MatMulInteger"] = matmul_integer;
  table["QLinearConv"] = qlinear_conv;
  table["QLinearMatMul"] = qlinear_matmul;
  table["QuantizeLinear"] = quantize_linear;
}

}  // namespace orchid::fission_detail
