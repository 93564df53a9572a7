// LpNormalization along one axis: y = x / ||x||_p with p = 1 (sum of |x|) or 2.
#include "fission/rule.hpp"

namespace orchid::fission_detail {

namespace {

void lp_norm(RuleContext& ctx) {
  const Node& node = ctx.node();
  const std::string x = ctx.input(0);
  const std::int64_t axis = normalize_axis(node.attr_int("axis", -1), ctx.rank(x), node.describe());
  std::string norm;
  if (node.attr_int("p", 2) == 1) {
    const std::string a = ctx.emit("Abs", {x}, {}, "abs");
    norm = ctx.reduce("ReduceSum", a, {axis}, true, "sum");
  } else {
    const std::string sq = ctx.emit("Mul", {x, x}, {}, "square");
    const std::string s = ctx.reduce("ReduceSum", sq, {axis}, true, "sum");
    norm = ctx.emit("Sqrt", {s}, {}, "sqrt");
  }
  ctx.emit("Div", {x, norm}, {}, "div", ctx.output(0));
}

}  // namespace

void register_lp_norm_rules(RuleTable& table) {
  table["LpNormalization"] = lp_norm;
}

}  // namespace orchid::fission_detail
