// BatchNormalization (inference): y = x * s + t with s = gamma / sqrt(var + eps) and
// t = beta - mean * s, both [C, 1, ...]. With constant statistics (the usual case) s and
// t are folded here, in double; otherwise they are computed by primitives.
#include <algorithm>
#include <cmath>

#include "fission/rule.hpp"

namespace orchid::fission_detail {

namespace {

void batch_norm(RuleContext& ctx) {
  const Node& node = ctx.node();
  const std::string x = ctx.input(0);
  const std::int64_t rank = ctx.rank(x);
  const DType dt = ctx.dtype(x);
  const double eps = node.attr_float("epsilon", 1e-5F);
  const Tensor* gamma = ctx.constant_value(ctx.input(1));
  const Tensor* beta = ctx.constant_value(ctx.input(2));
  const Tensor* mean = ctx.constant_value(ctx.input(3));
  const Tensor* var = ctx.constant_value(ctx.input(4));

  std::string scale, shift;
  if (gamma && beta && mean && var) {
    const std::int64_t c = gamma->numel();
    std::vector<double> s(static_cast<std::size_t>(c)), t(static_cast<std::size_t>(c));
    for (std::int64_t i = 0; i < c; ++i) {
      const auto k = static_cast<std::size_t>(i);
      s[k] = gamma->get_as_double(i) / std::sqrt(var->get_as_double(i) + eps);
      t[k] = beta->get_as_double(i) - mean->get_as_double(i) * s[k];
    }
    Shape cshape(static_cast<std::size_t>(std::max<std::int64_t>(rank - 1, 1)), 1);
    cshape[0] = c;
    scale = ctx.constant("scale", Tensor::from_vector<double>(cshape, s).cast(dt));
    shift = ctx.constant("shift", Tensor::from_vector<double>(cshape, t).cast(dt));
  } else {
    const std::string e = ctx.scalar("epsilon", eps, dt);
    const std::string ve = ctx.emit("Add", {ctx.input(4), e}, {}, "add_eps");
    const std::string sd = ctx.emit("Sqrt", {ve}, {}, "std");
    const std::string s = ctx.emit("Div", {ctx.input(1), sd}, {}, "scale_vec");
    const std::string ms = ctx.emit("Mul", {ctx.input(3), s}, {}, "mean_scaled");
    const std::string t = ctx.emit("Sub", {ctx.input(2), ms}, {}, "shift_vec");
    scale = ctx.channel_vector(s, rank, "scale");
    shift = ctx.channel_vector(t, rank, "shift");
  }
  const std::string scaled = ctx.emit("Mul", {x, scale}, {}, "mul");
  ctx.emit("Add", {scaled, shift}, {}, "add", ctx.output(0));
}

}  // namespace

void register_batch_norm_rules(RuleTable& table) {
  table["BatchNormalization"] = batch_norm;
}

}  // namespace orchid::fission_detail
