// Piecewise-linear activations as elementwise primitives:
//   HardSigmoid(x) = clip(alpha * x + beta, 0, 1)     (defaults alpha 0.2, beta 0.5)
//   HardSwish(x)   = x * HardSigmoid(x) with alpha 1/6, beta 0.5
//   Gelu(x)        = x * (Erf(x / sqrt 2) + 1) * 0.5  (the form the epilogue matcher knows)
//                    or, approximate="tanh", x * (Tanh(sqrt(2/pi) (x + 0.044715 x^3)) + 1) * 0.5
//   Mish(x)        = x * Tanh(Softplus(x))
//   Swish(x)       = x * Sigmoid(alpha * x)
// The other activations are primitives.
#include <cmath>
#include <numbers>

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

void gelu(RuleContext& ctx) {
  const std::string x = ctx.input(0);
  const DType dt = ctx.dtype(x);
  std::string core;
  if (ctx.node().attr_string("approximate", "none") == "tanh") {
    const std::string x2 = ctx.emit("Mul", {x, x}, {}, "square");
    const std::string x3 = ctx.emit("Mul", {x2, x}, {}, "cube");
    const std::string c3 = ctx.emit("Mul", {x3, ctx.scalar("c", 0.044715, dt)}, {}, "mul_c");
    const std::string inner = ctx.emit("Add", {x, c3}, {}, "inner");
    const std::string arg = ctx.emit(
        "Mul", {inner, ctx.scalar("sqrt_2_over_pi", std::sqrt(2.0 / std::numbers::pi), dt)}, {},
        "scale");
    core = ctx.emit("Tanh", {arg}, {}, "tanh");
  } else {
    const std::string arg =
        ctx.emit("Div", {x, ctx.scalar("sqrt2", std::sqrt(2.0), dt)}, {}, "div_sqrt2");
    core = ctx.emit("Erf", {arg}, {}, "erf");
  }
  const std::string plus1 = ctx.emit("Add", {core, ctx.scalar("one", 1.0, dt)}, {}, "add_one");
  const std::string xm = ctx.emit("Mul", {x, plus1}, {}, "mul_x");
  ctx.emit("Mul", {xm, ctx.scalar("half", 0.5, dt)}, {}, "mul_half", ctx.output(0));
}

void mish(RuleContext& ctx) {
  const std::string x = ctx.input(0);
  const std::string sp = ctx.emit("Softplus", {x}, {}, "softplus");
  const std::string t = ctx.emit("Tanh", {sp}, {}, "tanh");
  ctx.emit("Mul", {x, t}, {}, "mul", ctx.output(0));
}

void swish(RuleContext& ctx) {
  const std::string x = ctx.input(0);
  const double alpha = ctx.node().attr_float("alpha", 1.0F);
  const std::string ax =
      alpha == 1.0
          ? x
          : ctx.emit("Mul", {x, ctx.scalar("alpha", alpha, ctx.dtype(x))}, {}, "mul_alpha");
  const std::string s = ctx.emit("Sigmoid", {ax}, {}, "sigmoid");
  ctx.emit("Mul", {x, s}, {}, "mul", ctx.output(0));
}

}  // namespace

void register_activation_rules(RuleTable& table) {
  table["Gelu"] = gelu;
  table["Mish"] = mish;
  table["Swish"] = swish;
  table["HardSigmoid"] = hard_sigmoid;
  table["HardSwish"] = hard_swish;
}

}  // namespace orchid::fission_detail
