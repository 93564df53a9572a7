// Col2Im (opset 18) sums every sliding block back into the image. It is a layout
// primitive of its own (ir/ops/op_traits_table.cpp): each image element gathers the at
// most prod(block) block elements that land on it, so it stays one memory-bound
// primitive rather than a scatter-add built from others. The CPU plan executor runs it
// on its reference kernel; device code computes it inline as that gather.
#include "fission/rule.hpp"

namespace orchid::fission_detail {

void register_col2im_rules(RuleTable& table) {
  table["Col2Im"] = [](RuleContext& ctx) { ctx.pass_through(); };
}

}  // namespace orchid::fission_detail
