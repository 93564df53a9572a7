// Shape functions of the layout op family. These ops move bytes without arithmetic,
// so they accept every dtype (exporters route int64 shape tensors through them); Resize
// in linear mode (f32) and ScatterElements with a reduction (numeric) are the exceptions.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "ir/ops/layout_params.hpp"
#include "ir/ops/op_families.hpp"
#include "util/checked_math.hpp"

namespace orchid {

namespace {

std::vector<std::int64_t> int_input(const ShapeContext& ctx, std::size_t i, const char* what) {
  const Tensor& t = ctx.required_constant(i, what);
  if (t.dtype() != DType::I64 && t.dtype() != DType::I32) {
    ctx.fail("{} must be int64, got {}", what, dtype_name(t.dtype()));
  }
  return t.to_int64s();
}

std::vector<TensorType> infer_transpose(const ShapeContext& ctx) {
  const TensorType x = ctx.input(0);
  const auto perm = transpose_perm(ctx.node(), x.shape.size());
  Shape out(x.shape.size());
  for (std::size_t i = 0; i < perm.size(); ++i) out[i] = x.shape[static_cast<std::size_t>(perm[i])];
  return {{x.dtype, out}};
}

std::vector<TensorType> infer_reshape(const ShapeContext& ctx) {
  const TensorType x = ctx.input(0);
  const Tensor& shape = ctx.required_constant(1, "target shape");
  return {{x.dtype, reshape_target(ctx.node(), x.shape, shape)}};
}

std::vector<TensorType> infer_flatten(const ShapeContext& ctx) {
  const TensorType x = ctx.input(0);
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  std::int64_t axis = ctx.node().attr_int("axis", 1);
  if (axis < -rank || axis > rank) ctx.fail("axis {} is out of range for rank {}", axis, rank);
  if (axis < 0) axis += rank;
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t i = 0; i < rank; ++i)
    (i < axis ? outer : inner) *= x.shape[static_cast<std::size_t>(i)];
  return {{x.dtype, {outer, inner}}};
}

std::vector<std::int64_t> squeeze_axes(const ShapeContext& ctx, bool required) {
  if (ctx.has_input(1)) return int_input(ctx, 1, "axes");
  if (ctx.node().has_attribute("axes")) return ctx.node().attr_ints("axes", {});
  if (required) ctx.fail("axes input is required");
  return {};
}

std::vector<TensorType> infer_squeeze(const ShapeContext& ctx) {
  const TensorType x = ctx.input(0);
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  const bool given = ctx.has_input(1) || ctx.node().has_attribute("axes");
  const auto axes = normalized_axes(ctx.node(), squeeze_axes(ctx, false), rank);
  std::vector<bool> drop(x.shape.size(), false);
  for (auto a : axes) {
    if (x.shape[static_cast<std::size_t>(a)] != 1) {
      ctx.fail("cannot squeeze axis {} of size {} in {}", a, x.shape[static_cast<std::size_t>(a)],
               shape_to_string(x.shape));
    }
    drop[static_cast<std::size_t>(a)] = true;
  }
  Shape out;
  for (std::size_t i = 0; i < x.shape.size(); ++i) {
    if (given ? !drop[i] : x.shape[i] != 1) out.push_back(x.shape[i]);
  }
  return {{x.dtype, out}};
}

std::vector<TensorType> infer_unsqueeze(const ShapeContext& ctx) {
  const TensorType x = ctx.input(0);
  const auto raw = squeeze_axes(ctx, true);
  const auto rank = static_cast<std::int64_t>(x.shape.size() + raw.size());
  const auto axes = normalized_axes(ctx.node(), raw, rank);
  std::vector<bool> inserted(static_cast<std::size_t>(rank), false);
  for (auto a : axes) inserted[static_cast<std::size_t>(a)] = true;
  Shape out;
  std::size_t next = 0;
  for (std::int64_t i = 0; i < rank; ++i) {
    out.push_back(inserted[static_cast<std::size_t>(i)] ? 1 : x.shape[next++]);
  }
  return {{x.dtype, out}};
}

std::vector<TensorType> infer_concat(const ShapeContext& ctx) {
  const TensorType first = ctx.input(0);
  const auto rank = static_cast<std::int64_t>(first.shape.size());
  if (rank == 0) ctx.fail("cannot concatenate scalars");
  const std::int64_t axis =
      normalize_axis(ctx.node().required_int("axis"), rank, ctx.node().describe());
  Shape out = first.shape;
  out[static_cast<std::size_t>(axis)] = 0;
  for (std::size_t i = 0; i < ctx.num_inputs(); ++i) {
    const TensorType t = ctx.input(i);
    if (t.dtype != first.dtype) {
      ctx.fail("input {} has dtype {} but input 0 has {}", i, dtype_name(t.dtype),
               dtype_name(first.dtype));
    }
    bool ok = t.shape.size() == first.shape.size();
    for (std::size_t d = 0; ok && d < t.shape.size(); ++d) {
      ok = static_cast<std::int64_t>(d) == axis || t.shape[d] == first.shape[d];
    }
    if (!ok) {
      ctx.fail("input {} has shape {}, incompatible with {} along axis {}", i,
               shape_to_string(t.shape), shape_to_string(first.shape), axis);
    }
    out[static_cast<std::size_t>(axis)] =
        checked_add(out[static_cast<std::size_t>(axis)], t.shape[static_cast<std::size_t>(axis)],
                    ctx.node().describe());
  }
  return {{first.dtype, out}};
}

std::vector<TensorType> infer_split(const ShapeContext& ctx) {
  const TensorType x = ctx.input(0);
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  if (rank == 0) ctx.fail("cannot split a scalar (its input has rank 0)");
  const std::int64_t axis =
      normalize_axis(ctx.node().attr_int("axis", 0), rank, ctx.node().describe());
  const Tensor* split = ctx.has_input(1) ? &ctx.required_constant(1, "split sizes") : nullptr;
  const auto sizes = split_sizes(ctx.node(), x.shape[static_cast<std::size_t>(axis)], split,
                                 ctx.node().outputs.size());
  std::vector<TensorType> out;
  for (auto s : sizes) {
    Shape shape = x.shape;
    shape[static_cast<std::size_t>(axis)] = s;
    out.push_back({x.dtype, shape});
  }
  return out;
}

std::vector<TensorType> infer_slice(const ShapeContext& ctx) {
  const TensorType x = ctx.input(0);
  const Tensor& starts = ctx.required_constant(1, "starts");
  const Tensor& ends = ctx.required_constant(2, "ends");
  const Tensor* axes = ctx.has_input(3) ? &ctx.required_constant(3, "axes") : nullptr;
  const Tensor* steps = ctx.has_input(4) ? &ctx.required_constant(4, "steps") : nullptr;
  return {{x.dtype, slice_plan(ctx.node(), x.shape, starts, ends, axes, steps).output}};
}

std::vector<TensorType> infer_pad(const ShapeContext& ctx) {
  const TensorType x = ctx.input(0);
  const std::string mode = ctx.node().attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") ctx.unsupported("mode '{}'", mode);
  const Tensor& pads = ctx.required_constant(1, "pads");
  if (ctx.has_input(2)) {
    const TensorType v = ctx.input(2);
    if (v.dtype != x.dtype || shape_numel(v.shape) != 1) {
      ctx.fail("constant_value must be one {} value, got {} {}", dtype_name(x.dtype),
               dtype_name(v.dtype), shape_to_string(v.shape));
    }
  }
  const Tensor* axes = ctx.has_input(3) ? &ctx.required_constant(3, "axes") : nullptr;
  const PadPlan plan = pad_plan(ctx.node(), x.shape, pads, axes);
  if (mode != "constant") {
    for (std::size_t a = 0; a < x.shape.size(); ++a) {
      // Edge and reflect need something to copy from.
      if ((plan.before[a] > 0 || plan.after[a] > 0) && x.shape[a] == 0) {
        ctx.fail("cannot {}-pad empty axis {}", mode, a);
      }
      // Reflection mirrors the axis once (as ONNX Runtime does): a pad as long as the
      // axis has nothing left to mirror.
      const std::int64_t n = x.shape[a];
      if (mode == "reflect" && ((plan.before[a] > 0 && plan.before[a] >= n) ||
                                (plan.after[a] > 0 && plan.after[a] >= n))) {
        ctx.fail("reflect pads {} and {} of axis {} must be shorter than the axis ({})",
                 plan.before[a], plan.after[a], a, n);
      }
    }
  }
  return {{x.dtype, plan.output}};
}

std::vector<TensorType> infer_resize(const ShapeContext& ctx) {
  const TensorType x = ctx.input(0);
  const Node& node = ctx.node();
  const std::string mode = node.attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic") ctx.unsupported("mode '{}'", mode);
  const std::string ctm = node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (ctm != "half_pixel" && ctm != "pytorch_half_pixel" && ctm != "align_corners" &&
      ctm != "asymmetric" && ctm != "tf_half_pixel_for_nn" && ctm != "half_pixel_symmetric") {
    ctx.unsupported("coordinate_transformation_mode '{}'", ctm);
  }
  if (mode == "nearest") {
    const std::string nm = node.attr_string("nearest_mode", "round_prefer_floor");
    if (nm != "round_prefer_floor" && nm != "round_prefer_ceil" && nm != "floor" && nm != "ceil") {
      ctx.unsupported("nearest_mode '{}'", nm);
    }
  } else {
    ctx.require_dtype(0, {DType::F32});
  }
  // antialias (opset 18) widens the linear and cubic filters when downscaling; ONNX
  // defines nothing for nearest.
  if (node.attr_int("antialias", 0) != 0 && mode == "nearest") {
    ctx.unsupported(
        "antialias=1 with mode 'nearest' (antialiasing is defined for linear and "
        "cubic only)");
  }
  const Tensor* scales = ctx.has_input(2) ? &ctx.required_constant(2, "scales") : nullptr;
  const Tensor* sizes = ctx.has_input(3) ? &ctx.required_constant(3, "sizes") : nullptr;
  return {{x.dtype, resize_plan(node, x.shape, scales, sizes).output}};
}

// ScatterND (reduction "none"): output = data with slices at `indices` replaced by
// `updates`; indices [..., k] address the first k axes of data.
std::vector<TensorType> infer_scatter_nd(const ShapeContext& ctx) {
  const std::string reduction = ctx.node().attr_string("reduction", "none");
  if (reduction != "none") ctx.unsupported("reduction '{}'", reduction);
  ctx.require_dtype(1, {DType::I64});
  const Shape& data = ctx.input_shape(0);
  const Shape& indices = ctx.input_shape(1);
  const Shape& updates = ctx.input_shape(2);
  if (indices.empty()) ctx.fail("indices must have rank >= 1");
  const auto k = indices.back();
  if (k < 1 || k > static_cast<std::int64_t>(data.size())) {
    ctx.fail("indices' last dimension {} must be in [1, {}]", k, data.size());
  }
  Shape expected(indices.begin(), indices.end() - 1);
  expected.insert(expected.end(), data.begin() + k, data.end());
  if (updates != expected) {
    ctx.fail("updates have shape {}, expected {}", shape_to_string(updates),
             shape_to_string(expected));
  }
  if (ctx.input_dtype(2) != ctx.input_dtype(0)) ctx.fail("updates and data differ in dtype");
  return {{ctx.input_dtype(0), data}};
}

// Gather and GatherElements: the axis they index along (data must have rank >= 1);
// constant indices are range-checked now, so bad models fail at import.
std::size_t gather_axis(const ShapeContext& ctx, const Shape& data) {
  ctx.require_dtype(1, {DType::I64, DType::I32});
  const auto rank = static_cast<std::int64_t>(data.size());
  if (rank == 0) ctx.fail("data must have rank >= 1");
  const auto axis = static_cast<std::size_t>(
      normalize_axis(ctx.node().attr_int("axis", 0), rank, ctx.node().describe()));
  if (const Tensor* c = ctx.constant(1)) {
    const std::int64_t dim = data[axis];
    for (auto v : c->to_int64s()) {
      if (v < -dim || v >= dim) ctx.fail("index {} is out of range for axis of size {}", v, dim);
    }
  }
  return axis;
}

std::vector<TensorType> infer_gather(const ShapeContext& ctx) {
  const TensorType x = ctx.input(0);
  const std::size_t axis = gather_axis(ctx, x.shape);
  const Shape& idx = ctx.input_shape(1);
  Shape out(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), x.shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.shape.end());
  return {{x.dtype, out}};
}

// GatherElements and ScatterElements: indices have data's rank and address one data
// element each, so off the axis they may not be longer than data.
std::size_t elementwise_index_axis(const ShapeContext& ctx, const Shape& data, const Shape& idx) {
  if (idx.size() != data.size()) {
    ctx.fail("indices have rank {}, data rank {}", idx.size(), data.size());
  }
  const std::size_t axis = gather_axis(ctx, data);
  for (std::size_t d = 0; d < idx.size(); ++d) {
    if (d != axis && idx[d] > data[d]) {
      ctx.fail("indices dim {} is {}, larger than data's {}", d, idx[d], data[d]);
    }
  }
  return axis;
}

// GatherElements: out[i...] = data[i... with axis coordinate replaced by indices[i...]];
// indices has data's rank, the output its shape.
std::vector<TensorType> infer_gather_elements(const ShapeContext& ctx) {
  const TensorType x = ctx.input(0);
  const Shape& idx = ctx.input_shape(1);
  elementwise_index_axis(ctx, x.shape, idx);
  return {{x.dtype, idx}};
}

// ScatterElements: output = data, then for every position i... of indices,
// out[i... with axis coordinate replaced by indices[i...]] = updates[i...], or combined
// with it by `reduction` (opset 16+; max/min only from opset 18).
std::vector<TensorType> infer_scatter_elements(const ShapeContext& ctx) {
  const std::string reduction = ctx.node().attr_string("reduction", "none");
  const bool known =
      reduction == "none" || (ctx.opset() >= 16 && (reduction == "add" || reduction == "mul"));
  if (!known) ctx.unsupported("reduction '{}'", reduction);
  const TensorType x = ctx.input(0);
  const Shape& idx = ctx.input_shape(1);
  elementwise_index_axis(ctx, x.shape, idx);
  const TensorType updates = ctx.input(2);
  if (updates.shape != idx) {
    ctx.fail("updates have shape {}, indices {}", shape_to_string(updates.shape),
             shape_to_string(idx));
  }
  if (updates.dtype != x.dtype) ctx.fail("updates and data differ in dtype");
  // Combining needs arithmetic; plain replacement moves bytes of any dtype.
  if (reduction != "none") ctx.require_dtype(0, {DType::F32, DType::F64, DType::I64, DType::I32});
  return {{x.dtype, x.shape}};
}

// GatherND: indices [..., k] address k axes of data after the batch_dims leading axes,
// which data and indices share; each index tuple selects a slice of the remaining axes.
std::vector<TensorType> infer_gather_nd(const ShapeContext& ctx) {
  ctx.require_dtype(1, {DType::I64});
  const TensorType x = ctx.input(0);
  const Shape& idx = ctx.input_shape(1);
  const auto r = static_cast<std::int64_t>(x.shape.size());
  const auto q = static_cast<std::int64_t>(idx.size());
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1, got {} and {}", r, q);
  const std::int64_t b = ctx.node().attr_int("batch_dims", 0);
  if (b < 0 || b >= std::min(r, q)) {
    ctx.fail("batch_dims {} must be in [0, {})", b, std::min(r, q));
  }
  const auto batch = static_cast<std::size_t>(b);
  for (std::size_t d = 0; d < batch; ++d) {
    if (idx[d] != x.shape[d]) {
      ctx.fail("batch dim {} is {} in indices but {} in data", d, idx[d], x.shape[d]);
    }
  }
  const std::int64_t k = idx.back();
  if (k < 1 || k > r - b) ctx.fail("indices' last dimension {} must be in [1, {}]", k, r - b);
  if (const Tensor* c = ctx.constant(1)) {
    const auto values = c->to_int64s();
    for (std::size_t i = 0; i < values.size(); ++i) {
      const std::size_t a = batch + i % static_cast<std::size_t>(k);
      const std::int64_t dim = x.shape[a];
      if (values[i] < -dim || values[i] >= dim) {
        ctx.fail("index {} is out of range for axis {} of size {}", values[i], a, dim);
      }
    }
  }
  // indices.shape[:b] equals data.shape[:b], so the batch dims come with indices.
  Shape out(idx.begin(), idx.end() - 1);
  out.insert(out.end(), x.shape.begin() + b + k, x.shape.end());
  return {{x.dtype, out}};
}

std::vector<TensorType> infer_expand(const ShapeContext& ctx) {
  const TensorType x = ctx.input(0);
  const auto shape = int_input(ctx, 1, "target shape");
  return {{x.dtype, broadcast_shapes(x.shape, shape, ctx.node().describe())}};
}

std::vector<TensorType> infer_tile(const ShapeContext& ctx) {
  const TensorType x = ctx.input(0);
  const auto repeats = int_input(ctx, 1, "repeats");
  if (repeats.size() != x.shape.size()) {
    ctx.fail("repeats has {} values for an input of rank {}", repeats.size(), x.shape.size());
  }
  Shape out = x.shape;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (repeats[i] < 0) ctx.fail("repeats [{}] has a negative value", fmt::join(repeats, ","));
    out[i] = checked_mul(out[i], repeats[i], ctx.node().describe());
  }
  return {{x.dtype, out}};
}

std::vector<TensorType> infer_depth_to_space(const ShapeContext& ctx) {
  const TensorType x = ctx.input(0);
  const std::int64_t b = ctx.node().required_int("blocksize");
  if (x.shape.size() != 4) ctx.fail("input must be 4-D, got {}", shape_to_string(x.shape));
  const auto b2 = b < 1 ? std::nullopt : mul_no_overflow(b, b);
  if (!b2 || x.shape[1] % *b2 != 0) {
    ctx.fail("channels {} not divisible by blocksize^2 (blocksize {})", x.shape[1], b);
  }
  const std::string mode = ctx.node().attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") ctx.fail("mode must be DCR or CRD, got '{}'", mode);
  const std::string context = ctx.node().describe();
  return {{x.dtype,
           {x.shape[0], x.shape[1] / *b2, checked_mul(x.shape[2], b, context),
            checked_mul(x.shape[3], b, context)}}};
}

std::vector<TensorType> infer_space_to_depth(const ShapeContext& ctx) {
  const TensorType x = ctx.input(0);
  const std::int64_t b = ctx.node().required_int("blocksize");
  // Opset 28 added DepthToSpace's 'mode' here; DCR is the order of the earlier opsets.
  if (const std::string mode = ctx.node().attr_string("mode", "DCR"); mode != "DCR") {
    ctx.unsupported("mode '{}' (only DCR, the order before opset 28)", mode);
  }
  if (x.shape.size() != 4) ctx.fail("input must be 4-D, got {}", shape_to_string(x.shape));
  if (b < 1 || x.shape[2] % b != 0 || x.shape[3] % b != 0) {
    ctx.fail("spatial dims {}x{} not divisible by blocksize {}", x.shape[2], x.shape[3], b);
  }
  // Zero-sized spatial axes divide by any blocksize, so the channel product is checked.
  const std::string context = ctx.node().describe();
  return {{x.dtype,
           {x.shape[0], checked_mul(checked_mul(x.shape[1], b, context), b, context),
            x.shape[2] / b, x.shape[3] / b}}};
}

std::vector<TensorType> infer_col2im(const ShapeContext& ctx) {
  ctx.require_dtype(0, {DType::F32, DType::F64});
  const Col2ImPlan p =
      col2im_plan(ctx.node(), ctx.input_shape(0), ctx.required_constant(1, "image_shape"),
                  ctx.required_constant(2, "block_shape"));
  return {{ctx.input_dtype(0), p.output}};
}

}  // namespace

void register_layout_ops(OpSchemaTable& table) {
  table["Col2Im"] = {"Col2Im", 3, 3, 1, 1, infer_col2im};
  table["Transpose"] = {"Transpose", 1, 1, 1, 1, infer_transpose};
  table["ScatterND"] = {"ScatterND", 3, 3, 1, 1, infer_scatter_nd};
  table["Reshape"] = {"Reshape", 2, 2, 1, 1, infer_reshape};
  table["Flatten"] = {"Flatten", 1, 1, 1, 1, infer_flatten};
  table["Squeeze"] = {"Squeeze", 1, 2, 1, 1, infer_squeeze};
  table["Unsqueeze"] = {"Unsqueeze", 1, 2, 1, 1, infer_unsqueeze};
  table["Concat"] = {"Concat", 1, 1 << 20, 1, 1, infer_concat};
  table["Split"] = {"Split", 1, 2, 1, 1 << 20, infer_split};
  table["Slice"] = {"Slice", 3, 5, 1, 1, infer_slice};
  table["Pad"] = {"Pad", 2, 4, 1, 1, infer_pad};
  table["Resize"] = {"Resize", 1, 4, 1, 1, infer_resize};
  table["Gather"] = {"Gather", 2, 2, 1, 1, infer_gather};
  table["GatherElements"] = {"GatherElements", 2, 2, 1, 1, infer_gather_elements};
  table["GatherND"] = {"GatherND", 2, 2, 1, 1, infer_gather_nd};
  table["ScatterElements"] = {"ScatterElements", 3, 3, 1, 1, infer_scatter_elements};
  table["Expand"] = {"Expand", 2, 2, 1, 1, infer_expand};
  table["Tile"] = {"Tile", 2, 2, 1, 1, infer_tile};
  table["DepthToSpace"] = {"DepthToSpace", 1, 1, 1, 1, infer_depth_to_space};
  table["SpaceToDepth"] = {"SpaceToDepth", 1, 1, 1, 1, infer_space_to_depth};
}

}  // namespace orchid
