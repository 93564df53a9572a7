// QuantizeLinear and DequantizeLinear as float elementwise primitives, so QDQ models run
// wherever float primitives do (the quantized values are exact small integers in f32):
//   Q:  y = Cast(Clip(Round(x / s) + zp, lo, hi))            (lo, hi: the int8/uint8 range)
//   DQ: y = (Cast(x, f32) - zp) * s
// A DequantizeLinear that reads a QuantizeLinear's output reads the float value before
// its Cast instead (the QDQ pair stays in float; the Cast then has no reader and is
// dropped). Weights (constant Q/DQ inputs) fold to constants, so Conv and MatMul between
// QDQ pairs are plain linear primitives on dequantized operands: fp32 compute, stated in
// docs/quantization.md. Scales and zero points must be constants.
#include <algorithm>

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

void quantize_linear(RuleContext& ctx) {
  const std::string x = ctx.input(0);
  const DType to = ctx.model().tensor(ctx.output(0)).dtype;
  if (ctx.constant_value(x)) {  // a weight: emit folds it through the reference kernel
    ctx.emit("QuantizeLinear", ctx.node().inputs, ctx.node().attributes, "", ctx.output(0));
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
  if (it == floats.end() && ctx.constant_value(x)) {
    ctx.emit("DequantizeLinear", ctx.node().inputs, ctx.node().attributes, "", ctx.output(0));
    return;
  }
  std::string v = it != floats.end() ? it->second : ctx.cast(x, DType::F32, "to_float");
  if (ctx.node().has_input(2) && !all_zero(ctx.constant_value(ctx.input(2)))) {
    v = ctx.emit("Sub", {v, broadcast_param(ctx, x, 2, "zero_point")}, {}, "zero_point");
  }
  ctx.emit("Mul", {v, broadcast_param(ctx, x, 1, "scale")}, {}, "scale", ctx.output(0));
}

}  // namespace

void register_quantization_rules(RuleTable& table) {
  table["DequantizeLinear"] = dequantize_linear;
  table["QuantizeLinear"] = quantize_linear;
}

}  // namespace orchid::fission_detail
