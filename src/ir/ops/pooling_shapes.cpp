// Shape functions of the pooling op family: MaxPool, AveragePool, GlobalAveragePool,
// GlobalMaxPool.
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
  return {{DType::F32, out}, {DType::I64, out}};
}

std::vector<TensorType> infer_average_pool(const ShapeContext& ctx) {
  const Shape& x = pooled_input(ctx);
  const std::int64_t include = ctx.node().attr_int("count_include_pad", 0);
  if (include != 0 && include != 1) ctx.fail("count_include_pad must be 0 or 1, got {}", include);
  return {{DType::F32, window_output(ctx, x)}};
}

std::vector<TensorType> infer_global_pool(const ShapeContext& ctx) {
  const Shape& x = pooled_input(ctx);
  Shape out(x.size(), 1);
  out[0] = x[0];
  out[1] = x[1];
  return {{DType::F32, out}};
}

}  // namespace

void register_pooling_ops(OpSchemaTable& table) {
  table["MaxPool"] = {"MaxPool", 1, 1, 1, 2, infer_max_pool};
  table["AveragePool"] = {"AveragePool", 1, 1, 1, 1, infer_average_pool};
  table["GlobalAveragePool"] = {"GlobalAveragePool", 1, 1, 1, 1, infer_global_pool};
  table["GlobalMaxPool"] = {"GlobalMaxPool", 1, 1, 1, 1, infer_global_pool};
}

}  // namespace orchid
