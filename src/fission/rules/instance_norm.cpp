// InstanceNormalization: per sample and channel over the spatial axes,
//   y = (x - mean) / sqrt(var + eps) * scale + bias
// with scale and bias reshaped to [C, 1, ...] so they broadcast over the spatial axes.
#include "fission/rule.hpp"

namespace orchid::fission_detail {

namespace {

void instance_norm(RuleContext& ctx) {
  const std::string x = ctx.input(0);
  const std::int64_t rank = ctx.rank(x);
  const std::string xn =
      ctx.standardize(x, RuleContext::axes_from(2, rank), ctx.dtype(x)).normalized;
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
