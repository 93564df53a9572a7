// Ops whose value is known at compile time in a static graph: Shape and Size (from the
// static shape), EyeLike (from the input's shape), ConstantOfShape and Range (from
// constant inputs). They become constants; load_model has usually folded them already.
#include "eval/reference_interpreter.hpp"
#include "fission/rule.hpp"

namespace orchid::fission_detail {

namespace {

// `shape_only`: the op reads only its input's type, so a runtime input is fine.
FissionRule to_constant(bool shape_only) {
  return [shape_only](RuleContext& ctx) {
    const Node& node = ctx.node();
    std::vector<Tensor> placeholders;
    placeholders.reserve(node.inputs.size());
    std::vector<const Tensor*> values;
    for (const auto& in : node.inputs) {
      if (in.empty()) {
        values.push_back(nullptr);
        continue;
      }
      const Tensor* v = ctx.constant_value(in);
      if (!v) {
        if (!shape_only) ctx.unsupported("input '" + in + "' is computed at run time");
        placeholders.emplace_back(ctx.dtype(in), ctx.shape(in));
        v = &placeholders.back();
      }
      values.push_back(v);
    }
    std::vector<Tensor> result = run_reference_node(ctx.model(), node, values);
    const std::string value = ctx.constant("value", std::move(result.at(0)));
    ctx.alias(ctx.output(0), value);
  };
}

}  // namespace

void register_constant_rules(RuleTable& table) {
  table["Shape"] = to_constant(true);
  table["Size"] = to_constant(true);
  table["EyeLike"] = to_constant(true);
  table["ConstantOfShape"] = to_constant(false);
  table["Range"] = to_constant(false);
}

}  // namespace orchid::fission_detail
