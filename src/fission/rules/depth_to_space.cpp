// DepthToSpace and SpaceToDepth are a Reshape, a Transpose and a Reshape (NCHW):
//   DepthToSpace DCR: [N,b,b,C',H,W] perm (0,3,4,1,5,2) -> [N,C',H*b,W*b]
//   DepthToSpace CRD: [N,C',b,b,H,W] perm (0,1,4,2,5,3) -> [N,C',H*b,W*b]
//   SpaceToDepth:     [N,C,H',b,W',b] perm (0,3,5,1,2,4) -> [N,C*b*b,H',W']
#include "fission/rule.hpp"

namespace orchid::fission_detail {

namespace {

void depth_to_space(RuleContext& ctx) {
  const Node& node = ctx.node();
  const std::string x = ctx.input(0);
  const Shape& s = ctx.shape(x);
  const std::int64_t b = node.required_int("blocksize");
  const std::int64_t c = s[1] / (b * b);
  const bool crd = node.attr_string("mode", "DCR") == "CRD";
  const Shape split = crd ? Shape{s[0], c, b, b, s[2], s[3]} : Shape{s[0], b, b, c, s[2], s[3]};
  const std::vector<std::int64_t> perm = crd ? std::vector<std::int64_t>{0, 1, 4, 2, 5, 3}
                                             : std::vector<std::int64_t>{0, 3, 4, 1, 5, 2};
  const std::string r = ctx.reshape(x, split, "split");
  const std::string t = ctx.transpose(r, perm, "transpose");
  ctx.reshape(t, ctx.model_shape(ctx.output(0)), "merge", ctx.output(0));
}

void space_to_depth(RuleContext& ctx) {
  const std::string x = ctx.input(0);
  const Shape& s = ctx.shape(x);
  const std::int64_t b = ctx.node().required_int("blocksize");
  const std::string r = ctx.reshape(x, {s[0], s[1], s[2] / b, b, s[3] / b, b}, "split");
  const std::string t = ctx.transpose(r, {0, 3, 5, 1, 2, 4}, "transpose");
  ctx.reshape(t, ctx.model_shape(ctx.output(0)), "merge", ctx.output(0));
}

}  // namespace

void register_depth_to_space_rules(RuleTable& table) {
  table["DepthToSpace"] = depth_to_space;
  table["SpaceToDepth"] = space_to_depth;
}

}  // namespace orchid::fission_detail
