// InstanceNormalization: per sample and channel over the spatial axes,
//   y = (x - mean) / sqrt(var + eps) * scale + bias
// with scale and bias reshaped to [C, 1, ...] so they broadcast over the spatial axes.
#include "fission/rule.hpp"

namespace orchid::fission_detail {

namespace {

void instance_norm(RuleContext& ctx) {
  const Node& node = ctx.node();
  const std::string x = ctx.input(0);
  const std::int64_t rank = ctx.rank(x);
  std::vector<std::int64_t> axes;
  for (std::int64_t a = 2; a < rank; ++a) axes.push_back(a);
  const DType dt = ctx.dtype(x);

  const std::string mean = ctx.reduce("ReduceMean", x, axes, true, "mean");
  const std::string d = ctx.emit("Sub", {x, mean}, {}, "sub");
  const std::string d2 = ctx.emit("Mul", {d, d}, {}, "square");
  const std::string var = ctx.reduce("ReduceMean", d2, axes, true, "var");
  const std::string eps = ctx.scalar("epsilon", node.attr_float("epsilon", 1e-5F), dt);
  const std::string ve = ctx.emit("Add", {var, eps}, {}, "add_eps");
  const std::string sd = ctx.emit("Sqrt", {ve}, {}, "std");
  const std::string xn = ctx.emit("Div", {d, sd}, {}, "normalize");
  const std::string scale = ctx.channel_vector(ctx.input(1), rank, "scale_c11");
  const std::string bias = ctx.channel_vector(ctx.input(2), rank, "bias_c11");
  const std::string scaled = ctx.emit("Mul", {xn, scale}, {}, "scale");
  ctx.emit("Add", {scaled, bias}, {}, "bias", ctx.output(0));
}

}  // namespace

void register_instance_norm_rules(RuleTable& table) {
  table["InstanceNormalization"] = instance_norm;
}

}  // namespace orchid::fission_detail
