// Shape functions of the pooling op family: MaxPool, AveragePool, GlobalAveragePool,
// GlobalMaxPool, RoiAlign.
#include "ir/ops/op_families.hpp"
#include "ir/ops/window_geometry.hpp"

namespace orchid {

namespace {

const Shape& pooled_input(const ShapeContext& ctx) {
  ctx.require_dtype(0, {DType::F32});
  const Shape& x = ctx.input_shape(0);
  if (x.size() < 3)
    ctx.fail("input must have rank >= 3 (N, C, spatial...), got {}", shape_to_string(x));
  if (x.size() > 5) ctx.unsupported("{}-D pooling", x.size() - 2);
  return x;
}

Shape window_output(const ShapeContext& ctx, const Shape& x) {
  const auto kernel = ctx.node().required_ints("kernel_shape");
  const std::int64_t ceil_mode = ctx.node().attr_int("ceil_mode", 0);
  if (ceil_mode != 0 && ceil_mode != 1) ctx.fail("ceil_mode must be 0 or 1, got {}", ceil_mode);
  const WindowGeometry g =
      window_geometry(ctx.node(), {x.begin() + 2, x.end()}, kernel, ceil_mode != 0);
  Shape out{x[0], x[1]};
  out.insert(out.end(), g.output.begin(), g.output.end());
  return out;
}

std::vector<TensorType> infer_max_pool(const ShapeContext& ctx) {
  const Shape& x = pooled_input(ctx);
  if (ctx.node().outputs.size() > 1 && !ctx.node().outputs[1].empty()) {
    ctx.unsupported("the Indices output");
  }
  const std::int64_t order = ctx.node().attr_int("storage_order", 0);
  // storage_order only changes the Indices output, which is refused above.
  if (order != 0 && order != 1) ctx.fail("storage_order must be 0 or 1, got {}", order);
  const Shape out = window_output(ctx, x);
  return {{ctx.input_dtype(0), out}, {DType::I64, out}};
}

std::vector<TensorType> infer_average_pool(const ShapeContext& ctx) {
  const Shape& x = pooled_input(ctx);
  const std::int64_t include = ctx.node().attr_int("count_include_pad", 0);
  if (include != 0 && include != 1) ctx.fail("count_include_pad must be 0 or 1, got {}", include);
  return {{ctx.input_dtype(0), window_output(ctx, x)}};
}

std::vector<TensorType> infer_global_pool(const ShapeContext& ctx) {
  const Shape& x = pooled_input(ctx);
  Shape out(x.size(), 1);
  out[0] = x[0];
  out[1] = x[1];
  return {{ctx.input_dtype(0), out}};
}

// RoiAlign: per region of interest, an output_height x output_width grid of bins over
// the image X[batch_indices[r]], each the average (or max) of bilinear samples.
std::vector<TensorType> infer_roi_align(const ShapeContext& ctx) {
  ctx.require_dtype(0, {DType::F32});
  ctx.require_dtype(1, {DType::F32});
  ctx.require_dtype(2, {DType::I64});
  const Node& node = ctx.node();
  const Shape& x = ctx.input_shape(0);
  const Shape& rois = ctx.input_shape(1);
  const Shape& batch = ctx.input_shape(2);
  if (x.size() != 4) ctx.fail("X must be 4-D (N, C, H, W), got {}", shape_to_string(x));
  if (x[2] == 0 || x[3] == 0) ctx.fail("X has empty spatial dims {}", shape_to_string(x));
  if (rois.size() != 2 || rois[1] != 4) {
    ctx.fail("rois must be [num_rois, 4], got {}", shape_to_string(rois));
  }
  if (batch != Shape{rois[0]}) {
    ctx.fail("batch_indices have shape {}, expected [{}]", shape_to_string(batch), rois[0]);
  }
  const std::string mode = node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.unsupported("mode '{}'", mode);
  const char* ctm_key = "coordinate_transformation_mode";
  const std::string ctm = node.attr_string(ctm_key, "half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel") {
    ctx.unsupported("coordinate_transformation_mode '{}'", ctm);
  }
  // Before opset 16 the attribute did not exist and coordinates were output_half_pixel;
  // the kernel sees no opset and reads the attribute with the opset-16 default.
  if (ctx.opset() < 16 && !node.has_attribute(ctm_key)) {
    ctx.unsupported("opset < 16 coordinates without an explicit {}", ctm_key);
  }
  const std::int64_t oh = node.attr_int("output_height", 1);
  const std::int64_t ow = node.attr_int("output_width", 1);
  if (oh < 1 || ow < 1) ctx.fail("output size {}x{} must be positive", oh, ow);
  const std::int64_t ratio = node.attr_int("sampling_ratio", 0);
  if (ratio < 0) ctx.fail("sampling_ratio must be >= 0, got {}", ratio);
  if (const Tensor* c = ctx.constant(2)) {
    for (auto b : c->to_int64s()) {
      if (b < 0 || b >= x[0]) ctx.fail("batch index {} is out of range for a batch of {}", b, x[0]);
    }
  }
  return {{ctx.input_dtype(0), {rois[0], x[1], oh, ow}}};
}

}  // namespace

void register_pooling_ops(OpSchemaTable& table) {
  table["MaxPool"] = {"MaxPool", 1, 1, 1, 2, infer_max_pool};
  table["AveragePool"] = {"AveragePool", 1, 1, 1, 1, infer_average_pool};
  table["GlobalAveragePool"] = {"GlobalAveragePool", 1, 1, 1, 1, infer_global_pool};
  table["GlobalMaxPool"] = {"GlobalMaxPool", 1, 1, 1, 1, infer_global_pool};
  table["RoiAlign"] = {"RoiAlign", 3, 3, 1, 1, infer_roi_align};
}

}  // namespace orchid
