// Gemm: Y = alpha * A' B' + beta * C with A' = transA ? Aᵀ : A (likewise B')
//   = MatMul(A', B') [* alpha] [+ beta * C].
// Transposes and scalings of constant operands fold into new weights; alpha goes into a
// constant B (or A) when there is one, so the common Linear layer is MatMul + Add.
#include "fission/rule.hpp"

namespace orchid::fission_detail {

namespace {

void gemm(RuleContext& ctx) {
  const Node& node = ctx.node();
  const DType dt = ctx.dtype(ctx.input(0));
  std::string a = ctx.input(0);
  std::string b = ctx.input(1);
  if (node.attr_int("transA", 0) != 0) a = ctx.transpose(a, {1, 0}, "transpose_a");
  if (node.attr_int("transB", 0) != 0) b = ctx.transpose(b, {1, 0}, "transpose_b");

  const double alpha = node.attr_float("alpha", 1.0F);
  bool alpha_pending = alpha != 1.0;
  if (alpha_pending && ctx.constant_value(b)) {
    b = ctx.emit("Mul", {b, ctx.scalar("alpha", alpha, dt)}, {}, "alpha_b");
    alpha_pending = false;
  } else if (alpha_pending && ctx.constant_value(a)) {
    a = ctx.emit("Mul", {a, ctx.scalar("alpha", alpha, dt)}, {}, "alpha_a");
    alpha_pending = false;
  }

  const bool has_c = node.has_input(2);
  const double beta = node.attr_float("beta", 1.0F);
  std::string y =
      ctx.emit("MatMul", {a, b}, {}, "matmul", has_c || alpha_pending ? "" : ctx.output(0));
  if (alpha_pending) {
    y = ctx.emit("Mul", {y, ctx.scalar("alpha", alpha, dt)}, {}, "alpha",
                 has_c ? "" : ctx.output(0));
  }
  if (has_c) {
    std::string c = ctx.input(2);
    if (beta != 1.0) c = ctx.emit("Mul", {c, ctx.scalar("beta", beta, dt)}, {}, "beta_c");
    ctx.emit("Add", {y, c}, {}, "add_c", ctx.output(0));
  }
}

}  // namespace

void register_gemm_rules(RuleTable& table) {
  table["Gemm"] = gemm;
}

}  // namespace orchid::fission_detail
