// Global pools are reductions over the spatial axes (keepdims), so later stages see one
// reduce primitive instead of a window op. Windowed MaxPool/AveragePool are primitives.
#include "fission/rule.hpp"

namespace orchid::fission_detail {

namespace {

void global_pool(RuleContext& ctx, const char* reduce_op) {
  const std::string x = ctx.input(0);
  std::vector<std::int64_t> axes;
  for (std::int64_t a = 2; a < ctx.rank(x); ++a) axes.push_back(a);
  ctx.reduce(reduce_op, x, axes, true, "", ctx.output(0));
}

}  // namespace

void register_pooling_rules(RuleTable& table) {
  table["GlobalAveragePool"] = [](RuleContext& ctx) { global_pool(ctx, "ReduceMean"); };
  table["GlobalMaxPool"] = [](RuleContext& ctx) { global_pool(ctx, "ReduceMax"); };
}

}  // namespace orchid::fission_detail
