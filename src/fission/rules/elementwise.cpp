// Variadic elementwise ops become chains of binary primitives (the canonical form):
//   Sum = a + b + ...   Mean = Sum / n   Max/Min = pairwise Max/Min
// A single input is the identity. CastLike becomes Cast to the second input's dtype, and
// a Cast to the dtype the tensor already has disappears.
#include <fmt/format.h>

#include "fission/rule.hpp"

namespace orchid::fission_detail {

namespace {

// Left fold of the inputs with `op`; the last step writes `out` when given.
std::string fold(RuleContext& ctx, const std::string& op, const std::string& out) {
  const Node& node = ctx.node();
  std::string acc = node.inputs.at(0);
  for (std::size_t i = 1; i < node.inputs.size(); ++i) {
    const bool last = i + 1 == node.inputs.size();
    acc = ctx.emit(op, {acc, node.inputs[i]}, {},
                   last && !out.empty() ? "" : fmt::format("{}{}", op, i), last ? out : "");
  }
  return acc;
}

FissionRule variadic(const char* op) {
  return [op](RuleContext& ctx) {
    if (ctx.node().inputs.size() == 1) {
      ctx.alias(ctx.output(0), ctx.input(0));
      return;
    }
    fold(ctx, op, ctx.output(0));
  };
}

void mean(RuleContext& ctx) {
  const std::size_t n = ctx.node().inputs.size();
  if (n == 1) {
    ctx.alias(ctx.output(0), ctx.input(0));
    return;
  }
  const std::string s = fold(ctx, "Add", "");
  const std::string count = ctx.scalar("count", static_cast<double>(n), ctx.dtype(s));
  ctx.emit("Div", {s, count}, {}, "div", ctx.output(0));
}

void cast_to(RuleContext& ctx, DType to) {
  if (ctx.dtype(ctx.input(0)) == to) {
    ctx.alias(ctx.output(0), ctx.input(0));
  } else {
    ctx.cast(ctx.input(0), to, "", ctx.output(0));
  }
}

void cast_like(RuleContext& ctx) {
  cast_to(ctx, ctx.dtype(ctx.input(1)));
}

void cast(RuleContext& ctx) {
  cast_to(ctx, ctx.model().tensor(ctx.output(0)).dtype);
}

}  // namespace

void register_elementwise_rules(RuleTable& table) {
  table["Sum"] = variadic("Add");
  table["Max"] = variadic("Max");
  table["Min"] = variadic("Min");
  table["Mean"] = mean;
  table["CastLike"] = cast_like;
  table["Cast"] = cast;
}

}  // namespace orchid::fission_detail
