// Softmax, LogSoftmax and Hardmax over the op's axis, in the numerically safe form:
// the row maximum is subtracted before exponentiating.
#include "fission/rule.hpp"

namespace orchid::fission_detail {

namespace {

std::int64_t softmax_axis(const RuleContext& ctx) {
  const std::int64_t fallback = ctx.model().opset >= 13 ? -1 : 1;
  return normalize_axis(ctx.node().attr_int("axis", fallback), ctx.rank(ctx.input(0)),
                        ctx.node().describe());
}

// softmax(x) = e / sum(e) with e = exp(x - max(x)).
void softmax(RuleContext& ctx) {
  const std::string x = ctx.input(0);
  const std::int64_t axis = softmax_axis(ctx);
  const std::string m = ctx.reduce("ReduceMax", x, {axis}, true, "max");
  const std::string d = ctx.emit("Sub", {x, m}, {}, "sub");
  const std::string e = ctx.emit("Exp", {d}, {}, "exp");
  const std::string s = ctx.reduce("ReduceSum", e, {axis}, true, "sum");
  ctx.emit("Div", {e, s}, {}, "div", ctx.output(0));
  ctx.state().softmax_exp[ctx.output(0)] = e;
}

// log_softmax(x) = (x - max) - log(sum(exp(x - max))).
void log_softmax(RuleContext& ctx) {
  const std::string x = ctx.input(0);
  const std::int64_t axis = softmax_axis(ctx);
  const std::string m = ctx.reduce("ReduceMax", x, {axis}, true, "max");
  const std::string d = ctx.emit("Sub", {x, m}, {}, "sub");
  const std::string e = ctx.emit("Exp", {d}, {}, "exp");
  const std::string s = ctx.reduce("ReduceSum", e, {axis}, true, "sum");
  const std::string l = ctx.emit("Log", {s}, {}, "log");
  ctx.emit("Sub", {d, l}, {}, "sub_log", ctx.output(0));
}

// hardmax(x) = one-hot of the first maximum: ArgMax compared with an index ramp.
void hardmax(RuleContext& ctx) {
  const std::string x = ctx.input(0);
  const std::int64_t axis = softmax_axis(ctx);
  const std::string idx =
      ctx.emit("ArgMax", {x}, {{"axis", axis}, {"keepdims", std::int64_t{1}}}, "argmax");
  Shape ramp_shape(ctx.shape(x).size(), 1);
  const std::int64_t n = ctx.shape(x)[static_cast<std::size_t>(axis)];
  ramp_shape[static_cast<std::size_t>(axis)] = n;
  std::vector<std::int64_t> ramp(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) ramp[static_cast<std::size_t>(i)] = i;
  const std::string r = ctx.constant("ramp", Tensor::from_vector<std::int64_t>(ramp_shape, ramp));
  const std::string eq = ctx.emit("Equal", {idx, r}, {}, "equal");
  ctx.cast(eq, ctx.dtype(x), "cast", ctx.output(0));
}

}  // namespace

void register_softmax_rules(RuleTable& table) {
  table["Softmax"] = softmax;
  table["LogSoftmax"] = log_softmax;
  table["Hardmax"] = hardmax;
}

}  // namespace orchid::fission_detail
