// Shape-only ops in one canonical form:
//   Reshape / Flatten / Squeeze / Unsqueeze -> Reshape to the static output shape
//     (no 0 or -1 entries), or nothing when the shape does not change
//   Split   -> one Slice per output
//   Tile    -> Reshape (a unit axis before each repeated one), Expand, Reshape
//   Identity / Dropout (inference) -> nothing: consumers read the input
//   Transpose, Expand and Concat that change nothing -> nothing as well
#include "fission/rule.hpp"
#include "ir/ops/layout_params.hpp"

namespace orchid::fission_detail {

namespace {

void to_reshape(RuleContext& ctx) {
  ctx.reshape(ctx.input(0), ctx.model_shape(ctx.output(0)), "", ctx.output(0));
}

void identity(RuleContext& ctx) {
  ctx.alias(ctx.output(0), ctx.input(0));
}

void split(RuleContext& ctx) {
  const Node& node = ctx.node();
  const std::string x = ctx.input(0);
  const Shape& shape = ctx.shape(x);
  const std::int64_t axis = normalize_axis(node.attr_int("axis", 0), ctx.rank(x), node.describe());
  const Tensor* split = nullptr;
  if (node.has_input(1)) {
    split = ctx.constant_value(ctx.input(1));
    if (!split) ctx.unsupported("split sizes computed at run time");
  }
  const auto sizes =
      split_sizes(node, shape[static_cast<std::size_t>(axis)], split, node.outputs.size());
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < node.outputs.size(); ++i) {
    const std::int64_t end = offset + sizes[i];
    if (!node.outputs[i].empty()) {
      if (sizes[i] == shape[static_cast<std::size_t>(axis)]) {
        ctx.alias(node.outputs[i], x);
      } else {
        ctx.slice(x, {offset}, {end}, {axis}, fmt::format("slice{}", i), node.outputs[i]);
      }
    }
    offset = end;
  }
}

void tile(RuleContext& ctx) {
  const std::string x = ctx.input(0);
  const Tensor* repeats_value = ctx.constant_value(ctx.input(1));
  if (!repeats_value) ctx.unsupported("repeats computed at run time");
  const auto repeats = repeats_value->to_int64s();
  const Shape& in = ctx.shape(x);
  Shape split_shape, expanded;
  bool only_unit_axes = true;  // then Tile is a plain broadcast
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (repeats[i] != 1) {
      only_unit_axes = only_unit_axes && in[i] == 1;
      split_shape.push_back(1);
      expanded.push_back(repeats[i]);
    }
    split_shape.push_back(in[i]);
    expanded.push_back(in[i]);
  }
  const Shape& out = ctx.model_shape(ctx.output(0));
  if (split_shape == in) {
    ctx.alias(ctx.output(0), x);
    return;
  }
  if (only_unit_axes) {
    ctx.emit("Expand", {x, ctx.int64s("shape", out)}, {}, "expand", ctx.output(0));
    return;
  }
  const std::string r = ctx.reshape(x, split_shape, "unit_axes");
  const std::string e = ctx.emit("Expand", {r, ctx.int64s("shape", expanded)}, {}, "expand");
  ctx.reshape(e, out, "merge", ctx.output(0));
}

// Primitives kept as they are unless they would copy their input unchanged.
void transpose(RuleContext& ctx) {
  const std::string x = ctx.input(0);
  ctx.transpose(x, transpose_perm(ctx.node(), ctx.shape(x).size()), "", ctx.output(0));
}

void unless_noop(RuleContext& ctx) {
  const std::string x = ctx.input(0);
  const bool single_input = ctx.node().inputs.size() == 1;  // Concat of one tensor
  if ((single_input || ctx.node().op_type == "Expand") &&
      ctx.shape(x) == ctx.model_shape(ctx.output(0))) {
    ctx.alias(ctx.output(0), x);
  } else {
    ctx.pass_through();
  }
}

}  // namespace

void register_shape_op_rules(RuleTable& table) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) table[op] = to_reshape;
  table["Identity"] = identity;
  table["Dropout"] = identity;
  table["Split"] = split;
  table["Tile"] = tile;
  table["Transpose"] = transpose;
  table["Expand"] = unless_noop;
  table["Concat"] = unless_noop;
}

}  // namespace orchid::fission_detail
