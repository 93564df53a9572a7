// Reductions. ReduceSum/Max/Mean/Min/Prod are primitives; they are rewritten into one
// canonical form (sorted non-negative axes always given, keepdims explicit; ReduceSum's
// axes as an input, the others' as an attribute). The rest are built from them:
//   ReduceL1 = sum |x|            ReduceL2 = sqrt(sum x²)     ReduceSumSquare = sum x²
//   ReduceLogSum = log(sum x)     ReduceLogSumExp = m + log(sum exp(x - m)), m = max x
// TopK is a primitive in its Values-only form (a primitive has one output).
#include <fmt/format.h>

#include <algorithm>

#include "fission/rule.hpp"
#include "ir/ops/reduction_util.hpp"

namespace orchid::fission_detail {

namespace {

struct Reduction {
  std::vector<std::int64_t> axes;  // empty: the op is the identity
  bool keepdims = true;
};

Reduction resolve(const RuleContext& ctx) {
  const Node& node = ctx.node();
  const Tensor* axes_input = nullptr;
  if (node.has_input(1)) {
    axes_input = ctx.constant_value(ctx.input(1));
    if (!axes_input) ctx.unsupported("reduction axes computed at run time");
  }
  const auto resolved =
      reduction_util::resolve_reduction_axes(node, axes_input, ctx.rank(ctx.input(0)));
  Reduction r;
  r.keepdims = node.attr_int("keepdims", 1) != 0;
  if (resolved.noop) return r;
  for (std::size_t d = 0; d < resolved.reduced.size(); ++d) {
    if (resolved.reduced[d]) r.axes.push_back(static_cast<std::int64_t>(d));
  }
  return r;
}

FissionRule canonical(const char* op) {
  return [op](RuleContext& ctx) {
    const Reduction r = resolve(ctx);
    ctx.reduce(op, ctx.input(0), r.axes, r.keepdims, "", ctx.output(0));
  };
}

// reduce(pre(x)) then post(...), e.g. sqrt(sum(x*x)).
FissionRule composed(const char* pre, const char* post) {
  return [pre, post](RuleContext& ctx) {
    const Reduction r = resolve(ctx);
    std::string x = ctx.input(0);
    if (r.axes.empty()) {  // noop_with_empty_axes: the input unchanged, like the kernel
      ctx.alias(ctx.output(0), x);
      return;
    }
    const std::string p = std::string(pre);
    if (p == "Square") x = ctx.emit("Mul", {x, x}, {}, "square");
    if (p == "Abs") x = ctx.emit("Abs", {x}, {}, "abs");
    if (!*post) {
      ctx.reduce("ReduceSum", x, r.axes, r.keepdims, "sum", ctx.output(0));
      return;
    }
    const std::string s = ctx.reduce("ReduceSum", x, r.axes, r.keepdims, "sum");
    ctx.emit(post, {s}, {}, "post", ctx.output(0));
  };
}

void reduce_log_sum_exp(RuleContext& ctx) {
  const Reduction r = resolve(ctx);
  const std::string x = ctx.input(0);
  if (r.axes.empty()) {
    ctx.alias(ctx.output(0), x);
    return;
  }
  const std::string m = ctx.reduce("ReduceMax", x, r.axes, true, "max");
  const std::string d = ctx.emit("Sub", {x, m}, {}, "sub");
  const std::string e = ctx.emit("Exp", {d}, {}, "exp");
  const std::string s = ctx.reduce("ReduceSum", e, r.axes, true, "sum");
  const std::string l = ctx.emit("Log", {s}, {}, "log");
  if (r.keepdims) {
    ctx.emit("Add", {l, m}, {}, "add_max", ctx.output(0));
  } else {
    const std::string y = ctx.emit("Add", {l, m}, {}, "add_max");
    ctx.reshape(y, ctx.model_shape(ctx.output(0)), "squeeze", ctx.output(0));
  }
}

// Whether a model node or the model's outputs read `tensor`.
bool is_read(const Graph& model, const std::string& tensor) {
  if (std::find(model.outputs.begin(), model.outputs.end(), tensor) != model.outputs.end()) {
    return true;
  }
  return std::any_of(model.nodes.begin(), model.nodes.end(), [&](const Node& n) {
    return std::find(n.inputs.begin(), n.inputs.end(), tensor) != n.inputs.end();
  });
}

// TopK keeps only Values, with its axis made explicit and non-negative. An Indices
// output nothing reads is dropped; one that is read has no primitive form.
void topk(RuleContext& ctx) {
  const std::string values = ctx.output(0), indices = ctx.output(1);
  if (!indices.empty() && is_read(ctx.model(), indices)) {
    ctx.unsupported(fmt::format(
        "the Indices output '{}' is read, but a primitive has a single output (Values)", indices));
  }
  if (values.empty()) return;  // neither output is needed
  std::map<std::string, Attribute> attributes = ctx.node().attributes;
  attributes["axis"] = normalize_axis(ctx.node().attr_int("axis", -1), ctx.rank(ctx.input(0)),
                                      ctx.node().describe());
  ctx.emit("TopK", {ctx.input(0), ctx.input(1)}, std::move(attributes), "", values);
}

}  // namespace

void register_reduce_rules(RuleTable& table) {
  for (const char* op : {"ReduceSum", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd"}) {
    table[op] = canonical(op);
  }
  table["ReduceL1"] = composed("Abs", "");
  table["ReduceL2"] = composed("Square", "Sqrt");
  table["ReduceSumSquare"] = composed("Square", "");
  table["ReduceLogSum"] = composed("", "Log");
  table["ReduceLogSumExp"] = reduce_log_sum_exp;
  table["TopK"] = topk;
}

}  // namespace orchid::fission_detail
