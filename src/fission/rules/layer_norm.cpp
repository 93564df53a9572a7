// LayerNormalization (opset 17) over axes [axis, rank):
//   y = (x - mean) / sqrt(mean((x - mean)^2) + eps) * scale + bias
// The optional Mean and InvStdDev outputs come from the same intermediates.
#include "fission/rule.hpp"

namespace orchid::fission_detail {

namespace {

void layer_norm(RuleContext& ctx) {
  const Node& node = ctx.node();
  const std::string x = ctx.input(0);
  const std::int64_t rank = ctx.rank(x);
  const std::int64_t axis = normalize_axis(node.attr_int("axis", -1), rank, node.describe());
  std::vector<std::int64_t> axes;
  for (std::int64_t a = axis; a < rank; ++a) axes.push_back(a);
  const DType dt = ctx.dtype(x);

  const std::string mean = ctx.reduce("ReduceMean", x, axes, true, "mean");
  const std::string d = ctx.emit("Sub", {x, mean}, {}, "sub");
  const std::string d2 = ctx.emit("Mul", {d, d}, {}, "square");
  const std::string var = ctx.reduce("ReduceMean", d2, axes, true, "var");
  const std::string eps = ctx.scalar("epsilon", node.attr_float("epsilon", 1e-5F), dt);
  const std::string ve = ctx.emit("Add", {var, eps}, {}, "add_eps");
  const std::string sd = ctx.emit("Sqrt", {ve}, {}, "std");
  const std::string xn = ctx.emit("Div", {d, sd}, {}, "normalize");
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
