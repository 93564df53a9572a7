// Piecewise-linear activations as elementwise primitives:
//   HardSigmoid(x) = clip(alpha * x + beta, 0, 1)     (defaults alpha 0.2, beta 0.5)
//   HardSwish(x)   = x * HardSigmoid(x) with alpha 1/6, beta 0.5
// SiLU (x * Sigmoid(x)), GELU (Erf or Tanh forms) and Mish (x * Tanh(Softplus(x))) reach
// orchid already spelled out in primitives; the other activations are primitives.
#include "fission/rule.hpp"

namespace orchid::fission_detail {

namespace {

std::string hard_sigmoid_of(RuleContext& ctx, double alpha, double beta, const std::string& out) {
  const std::string x = ctx.input(0);
  const DType dt = ctx.dtype(x);
  const std::string ax = ctx.emit("Mul", {x, ctx.scalar("alpha", alpha, dt)}, {}, "mul_alpha");
  const std::string shifted = ctx.emit("Add", {ax, ctx.scalar("beta", beta, dt)}, {}, "add_beta");
  return ctx.emit("Clip", {shifted, ctx.scalar("zero", 0.0, dt), ctx.scalar("one", 1.0, dt)}, {},
                  "clip", out);
}

void hard_sigmoid(RuleContext& ctx) {
  const Node& node = ctx.node();
  hard_sigmoid_of(ctx, node.attr_float("alpha", 0.2F), node.attr_float("beta", 0.5F),
                  ctx.output(0));
}

void hard_swish(RuleContext& ctx) {
  const std::string gate = hard_sigmoid_of(ctx, 1.0 / 6.0, 0.5, "");
  ctx.emit("Mul", {ctx.input(0), gate}, {}, "mul", ctx.output(0));
}

}  // namespace

void register_activation_rules(RuleTable& table) {
  table["HardSigmoid"] = hard_sigmoid;
  table["HardSwish"] = hard_swish;
}

}  // namespace orchid::fission_detail
