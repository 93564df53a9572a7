// GroupNormalization (opsets 18 and 21) and RMSNormalization (opset 23):
//   GroupNorm: x viewed as [N, G, C/G * spatial]; y = (x - mean) / sqrt(var + eps) over the
//              last axis, then scale and bias per channel (opset 21) or per group (opset 18,
//              shape [G]: applied in the grouped view).
//   RMSNorm:   y = x / sqrt(mean(x^2 over axes [axis, rank)) + eps) * scale
#include "fission/rule.hpp"

namespace orchid::fission_detail {

namespace {

void group_norm(RuleContext& ctx) {
  const Node& node = ctx.node();
  const std::string x = ctx.input(0);
  const Shape x_shape = ctx.shape(x);
  const std::int64_t groups = node.required_int("num_groups");
  const DType dt = ctx.dtype(x);
  const std::int64_t width = shape_numel(x_shape) / (x_shape[0] * groups);
  const std::string grouped = ctx.reshape(x, {x_shape[0], groups, width}, "grouped");
  const std::string xn = ctx.standardize(grouped, {2}, dt).normalized;
  if (ctx.shape(ctx.input(1))[0] != x_shape[1]) {  // per group: [G] -> [G, 1]
    const std::string scale = ctx.reshape(ctx.input(1), {groups, 1}, "scale_g1");
    const std::string bias = ctx.reshape(ctx.input(2), {groups, 1}, "bias_g1");
    const std::string scaled = ctx.emit("Mul", {xn, scale}, {}, "scale");
    const std::string biased = ctx.emit("Add", {scaled, bias}, {}, "bias");
    ctx.reshape(biased, x_shape, "ungroup", ctx.output(0));
    return;
  }
  const auto rank = static_cast<std::int64_t>(x_shape.size());
  const std::string back = ctx.reshape(xn, x_shape, "ungroup");
  const std::string scale = ctx.channel_vector(ctx.input(1), rank, "scale_c11");
  const std::string bias = ctx.channel_vector(ctx.input(2), rank, "bias_c11");
  const std::string scaled = ctx.emit("Mul", {back, scale}, {}, "scale");
  ctx.emit("Add", {scaled, bias}, {}, "bias", ctx.output(0));
}

void rms_norm(RuleContext& ctx) {
  const Node& node = ctx.node();
  const std::string x = ctx.input(0);
  const std::vector<std::int64_t> axes = ctx.axes_from_axis_attribute(x);
  const DType dt = ctx.dtype(x);
  const std::string x2 = ctx.emit("Mul", {x, x}, {}, "square");
  const std::string ms = ctx.reduce("ReduceMean", x2, axes, true, "mean_square");
  const std::string eps = ctx.scalar("epsilon", node.attr_float("epsilon", 1e-5F), dt);
  const std::string mse = ctx.emit("Add", {ms, eps}, {}, "add_eps");
  const std::string rms = ctx.emit("Sqrt", {mse}, {}, "rms");
  const std::string xn = ctx.emit("Div", {x, rms}, {}, "normalize");
  ctx.emit("Mul", {xn, ctx.input(1)}, {}, "scale", ctx.output(0));
}

}  // namespace

void register_group_rms_norm_rules(RuleTable& table) {
  table["GroupNormalization"] = group_norm;
  table["RMSNormalization"] = rms_norm;
}

}  // namespace orchid::fission_detail
