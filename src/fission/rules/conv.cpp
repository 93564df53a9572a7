// Conv and ConvTranspose: the linear primitive without bias, then an Add of the bias
// reshaped to [C, 1, ...]. Without a bias the node already is a primitive.
#include "fission/rule.hpp"

namespace orchid::fission_detail {

namespace {

void conv_with_bias(RuleContext& ctx) {
  const Node& node = ctx.node();
  if (!node.has_input(2)) {
    ctx.pass_through();
    return;
  }
  const std::string y = ctx.emit(node.op_type, {ctx.input(0), ctx.input(1)}, node.attributes, "");
  const std::string bias = ctx.channel_vector(ctx.input(2), ctx.rank(y), "bias_c11");
  ctx.emit("Add", {y, bias}, {}, "bias", ctx.output(0));
}

}  // namespace

void register_conv_rules(RuleTable& table) {
  table["Conv"] = conv_with_bias;
  table["ConvTranspose"] = conv_with_bias;
}

}  // namespace orchid::fission_detail
