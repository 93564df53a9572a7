// Col2Im (opset 18) sums every sliding block back into the image: a scatter-add whose
// overlapping windows no primitive class expresses. The reference interpreter runs it;
// fission (and so orchestration and the plan executors) refuses it by name.
#include "fission/rule.hpp"

namespace orchid::fission_detail {

void register_col2im_rules(RuleTable& table) {
  table["Col2Im"] = [](RuleContext& ctx) {
    ctx.unsupported(
        "Col2Im (a scatter-add of overlapping blocks) has no fission into primitives; the "
        "reference interpreter runs it (orchid run without --device/--plan)");
  };
}

}  // namespace orchid::fission_detail
