// Shape functions of the normalization op family: BatchNormalization (inference),
// InstanceNormalization, LayerNormalization (opset 17), GroupNormalization (opsets 18 and
// 21), RMSNormalization (opset 23) and LpNormalization.
#include <string>

#include "ir/ops/op_families.hpp"

namespace orchid {

namespace {

constexpr std::initializer_list<DType> kFloat = {DType::F32, DType::F64};

// Per-channel parameter i must be a float vector of length `channels`.
void require_channel_vector(const ShapeContext& ctx, std::size_t i, const char* what,
                            std::int64_t channels) {
  ctx.require_dtype(i, kFloat);
  const Shape& s = ctx.input_shape(i);
  if (s.size() != 1 || s[0] != channels) {
    ctx.fail("{} (input {}) must have shape {}, got {}", what, i, channels, shape_to_string(s));
  }
}

void refuse_extra_outputs(const ShapeContext& ctx, const char* why) {
  for (std::size_t i = 1; i < ctx.node().outputs.size(); ++i) {
    if (!ctx.node().outputs[i].empty()) ctx.unsupported("output {} ({})", i, why);
  }
}

// Input 0 as an N x C x ... float tensor (InstanceNorm, GroupNorm); returns its shape.
const Shape& require_nc_input(const ShapeContext& ctx) {
  ctx.require_dtype(0, kFloat);
  const Shape& x = ctx.input_shape(0);
  if (x.size() < 2) ctx.fail("input must have rank >= 2 (N x C x ...), got {}", x.size());
  return x;
}

// LayerNorm and RMSNorm normalize over axes [axis, rank) and accept the same stash types,
// so they share these checks (in this order, for the same first error).
struct NormalizedAxes {
  std::size_t axis;
  std::int64_t stash;
  Shape normalized;  // x's dims [axis, rank)
};

NormalizedAxes require_normalized_axes(const ShapeContext& ctx) {
  ctx.require_dtype(0, kFloat);
  const Shape& x = ctx.input_shape(0);
  const auto rank = static_cast<std::int64_t>(x.size());
  if (rank == 0) ctx.fail("input must have rank >= 1");
  const auto axis = static_cast<std::size_t>(
      normalize_axis(ctx.node().attr_int("axis", -1), rank, ctx.node().describe()));
  // Statistics are always computed in double, which is at least as exact as either
  // permitted stash type; the value only decides LayerNorm's Mean/InvStdDev output dtype.
  const std::int64_t stash = ctx.node().attr_int("stash_type", 1);
  if (stash != 1 && stash != 11) ctx.unsupported("stash_type={}", stash);
  return {axis, stash, Shape(x.begin() + static_cast<std::ptrdiff_t>(axis), x.end())};
}

// Float parameter i (`what`) must broadcast to the normalized shape.
void require_broadcasts_to(const ShapeContext& ctx, std::size_t i, const char* what,
                           const Shape& normalized) {
  ctx.require_dtype(i, kFloat);
  const Shape& p = ctx.input_shape(i);
  if (p.size() > normalized.size() ||
      broadcast_shapes(normalized, p, ctx.node().describe()) != normalized) {
    ctx.fail("{} shape {} does not broadcast to the normalized shape {}", what, shape_to_string(p),
             shape_to_string(normalized));
  }
}

std::vector<TensorType> infer_batch_norm(const ShapeContext& ctx) {
  ctx.require_dtype(0, kFloat);
  if (ctx.node().attr_int("training_mode", 0) != 0) ctx.unsupported("training_mode=1");
  if (ctx.node().attr_int("spatial", 1) != 1) ctx.unsupported("spatial=0 (opset < 9 form)");
  refuse_extra_outputs(ctx, "running statistics are only produced in training mode");
  const Shape& x = ctx.input_shape(0);
  if (x.size() < 2) ctx.fail("input must have rank >= 2 (N x C x ...), got {}", x.size());
  const char* names[] = {"scale", "B", "input_mean", "input_var"};
  for (std::size_t i = 1; i <= 4; ++i) {
    if (!ctx.has_input(i)) ctx.fail("input {} ({}) is missing", i, names[i - 1]);
    require_channel_vector(ctx, i, names[i - 1], x[1]);
  }
  return {ctx.input(0)};
}

std::vector<TensorType> infer_instance_norm(const ShapeContext& ctx) {
  const Shape& x = require_nc_input(ctx);
  require_channel_vector(ctx, 1, "scale", x[1]);
  require_channel_vector(ctx, 2, "B", x[1]);
  return {ctx.input(0)};
}

std::vector<TensorType> infer_layer_norm(const ShapeContext& ctx) {
  const NormalizedAxes n = require_normalized_axes(ctx);
  for (std::size_t i = 1; i <= 2; ++i) {
    if (!ctx.has_input(i)) {
      if (i == 1) ctx.fail("input 1 (Scale) is missing");
      continue;
    }
    require_broadcasts_to(ctx, i, i == 1 ? "Scale" : "B", n.normalized);
  }
  const Shape& x = ctx.input_shape(0);
  Shape stat_shape = x;
  for (std::size_t d = n.axis; d < x.size(); ++d) stat_shape[d] = 1;
  const DType stat_dtype = n.stash == 11 ? DType::F64 : DType::F32;
  return {ctx.input(0), {stat_dtype, stat_shape}, {stat_dtype, stat_shape}};
}

// Scale and bias per group (opset 18) or per channel (opset 21). The importer keeps
// opset-17 semantics and does not say which opset a node came from, but the lengths
// tell: with num_groups == C the two forms are the same computation.
std::vector<TensorType> infer_group_norm(const ShapeContext& ctx) {
  const Shape& x = require_nc_input(ctx);
  const std::int64_t groups = ctx.node().required_int("num_groups");
  if (groups <= 0 || x[1] % groups != 0) {
    ctx.fail("num_groups {} must be positive and divide the {} channels", groups, x[1]);
  }
  const std::int64_t stash = ctx.node().attr_int("stash_type", 1);
  if (stash != 1) ctx.unsupported("stash_type={}", stash);
  const char* names[] = {"scale", "bias"};
  for (std::size_t i = 1; i <= 2; ++i) {
    ctx.require_dtype(i, kFloat);
    const Shape& p = ctx.input_shape(i);
    if (p.size() != 1 || (p[0] != x[1] && p[0] != groups)) {
      ctx.fail("{} (input {}) must have shape {} (channels) or {} (groups), got {}", names[i - 1],
               i, x[1], groups, shape_to_string(p));
    }
  }
  if (ctx.input_shape(1) != ctx.input_shape(2)) {
    ctx.fail("scale {} and bias {} must have the same shape", shape_to_string(ctx.input_shape(1)),
             shape_to_string(ctx.input_shape(2)));
  }
  return {ctx.input(0)};
}

// Y = X / sqrt(mean(X^2 over axes [axis, rank)) + epsilon) * scale.
std::vector<TensorType> infer_rms_norm(const ShapeContext& ctx) {
  require_broadcasts_to(ctx, 1, "scale", require_normalized_axes(ctx).normalized);
  return {ctx.input(0)};
}

std::vector<TensorType> infer_lp_norm(const ShapeContext& ctx) {
  ctx.require_dtype(0, kFloat);
  const Shape& x = ctx.input_shape(0);
  const auto rank = static_cast<std::int64_t>(x.size());
  if (rank == 0) ctx.fail("input must have rank >= 1");
  normalize_axis(ctx.node().attr_int("axis", -1), rank, ctx.node().describe());
  const std::int64_t p = ctx.node().attr_int("p", 2);
  if (p != 1 && p != 2) ctx.unsupported("p={} (only 1 and 2)", p);
  return {ctx.input(0)};
}

}  // namespace

void register_normalization_ops(OpSchemaTable& table) {
  table["BatchNormalization"] = OpSchema{"BatchNormalization", 5, 5, 1, 3, infer_batch_norm};
  table["InstanceNormalization"] =
      OpSchema{"InstanceNormalization", 3, 3, 1, 1, infer_instance_norm};
  table["LayerNormalization"] = OpSchema{"LayerNormalization", 2, 3, 1, 3, infer_layer_norm};
  table["GroupNormalization"] = OpSchema{"GroupNormalization", 3, 3, 1, 1, infer_group_norm};
  table["RMSNormalization"] = OpSchema{"RMSNormalization", 2, 2, 1, 1, infer_rms_norm};
  table["LpNormalization"] = OpSchema{"LpNormalization", 1, 1, 1, 1, infer_lp_norm};
}

}  // namespace orchid
