// LayerNormalization (opset 17) over axes [axis, rank):
//   y = (x - mean) / sqrt(mean((x - mean)^2) + eps) * scale + bias
// The optional Mean and InvStdDev outputs come from the same intermediates.
#include "fission/rule.hpp"

namespace orchid::fission_detail {

namespace {

void layer_norm(RuleContext& ctx) {
  const Node& node = ctx.node();
  const std::string x = ctx.input(0);
  const DType dt = ctx.dtype(x);
  const auto [mean, sd, xn] = ctx.standardize(x, ctx.axes_from_axis_attribute(x), dt);
  const bool has_bias = node.has_input(2);
  const std::string scaled =
      ctx.emit("Mul", {xn, ctx.input(1)}, {}, "scale", has_bias ? "" : ctx.output(0));
  if (has_bias) ctx.emit("Add", {scaled, ctx.input(2)}, {}, "bias", ctx.output(0));

  // Statistics outputs, in the stash dtype the op declares for them.
  const std::string mean_out = ctx.output(1);
  const std::string inv_out = ctx.output(2);
  const auto stat = [&](const std::string& value, const std::string& out, const char* what) {
    const DType want = ctx.model().tensor(out).dtype;
    if (want == dt) {
      ctx.alias(out, value);
    } else {
      ctx.cast(value, want, what, out);
    }
  };
  if (!mean_out.empty()) stat(mean, mean_out, "mean_cast");
  if (!inv_out.empty()) stat(ctx.emit("Reciprocal", {sd}, {}, "inv_std"), inv_out, "inv_cast");
}

}  // namespace

void register_layer_norm_rules(RuleTable& table) {
  table["LayerNormalization"] = layer_norm;
}

}  // namespace orchid::fission_detail
