// Shape functions of the linear op family: Conv, ConvTranspose, Gemm, MatMul.
#include <fmt/format.h>

#include "ir/ops/op_families.hpp"
#include "ir/ops/window_geometry.hpp"

namespace orchid {

namespace {

std::vector<std::int64_t> spatial_of(const Shape& shape) {
  return {shape.begin() + 2, shape.end()};
}

// Validates that kernel_shape, when given, agrees with the weight.
void check_kernel_shape(const ShapeContext& ctx, const std::vector<std::int64_t>& kernel) {
  const auto declared = ctx.node().attr_ints("kernel_shape", kernel);
  if (declared != kernel) {
    ctx.fail("kernel_shape {} disagrees with the weight's spatial shape {}",
             shape_to_string(declared), shape_to_string(kernel));
  }
}

std::vector<TensorType> infer_conv(const ShapeContext& ctx) {
  ctx.require_dtype(0, {DType::F32});
  ctx.require_dtype(1, {DType::F32});
  const Shape& x = ctx.input_shape(0);
  const Shape& w = ctx.input_shape(1);
  if (x.size() < 3)
    ctx.fail("input X must have rank >= 3 (N, C, spatial...), got {}", shape_to_string(x));
  if (x.size() > 5) ctx.unsupported("{}-D convolution", x.size() - 2);
  if (w.size() != x.size()) {
    ctx.fail("weight W has shape {} but input X has rank {}", shape_to_string(w), x.size());
  }
  const std::int64_t group = ctx.node().attr_int("group", 1);
  if (group < 1) ctx.fail("group must be positive, got {}", group);
  if (x[1] % group != 0 || w[0] % group != 0) {
    ctx.fail("input channels {} and output channels {} must both be divisible by group {}", x[1],
             w[0], group);
  }
  if (w[1] * group != x[1]) {
    ctx.fail("input has {} channels but weight {} expects {} (group {})", x[1], shape_to_string(w),
             w[1] * group, group);
  }
  if (ctx.has_input(2)) {
    ctx.require_dtype(2, {DType::F32});
    const Shape& b = ctx.input_shape(2);
    if (b.size() != 1 || b[0] != w[0]) {
      ctx.fail("bias B has shape {}, expected {}", shape_to_string(b), w[0]);
    }
  }
  const auto kernel = spatial_of(w);
  check_kernel_shape(ctx, kernel);
  const WindowGeometry g = window_geometry(ctx.node(), spatial_of(x), kernel, false);
  Shape out{x[0], w[0]};
  out.insert(out.end(), g.output.begin(), g.output.end());
  return {{ctx.input_dtype(0), out}};
}

std::vector<TensorType> infer_conv_transpose(const ShapeContext& ctx) {
  ctx.require_dtype(0, {DType::F32});
  ctx.require_dtype(1, {DType::F32});
  const Shape& x = ctx.input_shape(0);
  const Shape& w = ctx.input_shape(1);
  if (x.size() < 3)
    ctx.fail("input X must have rank >= 3 (N, C, spatial...), got {}", shape_to_string(x));
  if (x.size() > 5) ctx.unsupported("{}-D transposed convolution", x.size() - 2);
  if (w.size() != x.size()) {
    ctx.fail("weight W has shape {} but input X has rank {}", shape_to_string(w), x.size());
  }
  const std::int64_t group = ctx.node().attr_int("group", 1);
  if (group < 1) ctx.fail("group must be positive, got {}", group);
  if (w[0] != x[1] || x[1] % group != 0) {
    ctx.fail("input has {} channels but weight {} expects {} (group {})", x[1], shape_to_string(w),
             w[0], group);
  }
  const std::int64_t out_channels = w[1] * group;
  if (ctx.has_input(2)) {
    ctx.require_dtype(2, {DType::F32});
    const Shape& b = ctx.input_shape(2);
    if (b.size() != 1 || b[0] != out_channels) {
      ctx.fail("bias B has shape {}, expected {}", shape_to_string(b), out_channels);
    }
  }
  const auto kernel = spatial_of(w);
  check_kernel_shape(ctx, kernel);
  const WindowGeometry g = conv_transpose_geometry(ctx.node(), spatial_of(x), kernel);
  Shape out{x[0], out_channels};
  out.insert(out.end(), g.output.begin(), g.output.end());
  return {{ctx.input_dtype(0), out}};
}

std::vector<TensorType> infer_gemm(const ShapeContext& ctx) {
  for (std::size_t i = 0; i < 3; ++i) {
    if (ctx.has_input(i)) ctx.require_dtype(i, {DType::F32});
  }
  const Shape& a = ctx.input_shape(0);
  const Shape& b = ctx.input_shape(1);
  if (a.size() != 2 || b.size() != 2) {
    ctx.fail("A and B must be matrices, got {} and {}", shape_to_string(a), shape_to_string(b));
  }
  const bool ta = ctx.node().attr_int("transA", 0) != 0;
  const bool tb = ctx.node().attr_int("transB", 0) != 0;
  const std::int64_t m = ta ? a[1] : a[0];
  const std::int64_t ka = ta ? a[0] : a[1];
  const std::int64_t kb = tb ? b[1] : b[0];
  const std::int64_t n = tb ? b[0] : b[1];
  if (ka != kb) {
    ctx.fail("inner dimensions differ: A {} (transA {}) and B {} (transB {})", shape_to_string(a),
             ta, shape_to_string(b), tb);
  }
  if (ctx.has_input(2)) {
    const Shape& c = ctx.input_shape(2);
    // C broadcasts one way only: to (M, N).
    bool ok = c.size() <= 2;
    if (ok && c.size() == 2) ok = (c[0] == 1 || c[0] == m) && (c[1] == 1 || c[1] == n);
    if (ok && c.size() == 1) ok = c[0] == 1 || c[0] == n;
    if (!ok) ctx.fail("C of shape {} does not broadcast to {}x{}", shape_to_string(c), m, n);
  }
  return {{ctx.input_dtype(0), {m, n}}};
}

std::vector<TensorType> infer_matmul(const ShapeContext& ctx) {
  ctx.require_dtype(0, {DType::F32});
  ctx.require_dtype(1, {DType::F32});
  Shape a = ctx.input_shape(0);
  Shape b = ctx.input_shape(1);
  if (a.empty() || b.empty()) ctx.fail("MatMul inputs must have rank >= 1");
  const bool a_vec = a.size() == 1;
  const bool b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  if (a[a.size() - 1] != b[b.size() - 2]) {
    ctx.fail("inner dimensions differ: {} and {}", shape_to_string(ctx.input_shape(0)),
             shape_to_string(ctx.input_shape(1)));
  }
  Shape out = broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2),
                               ctx.node().describe() + " batch dimensions");
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b.back());
  return {{ctx.input_dtype(0), out}};
}

}  // namespace

void register_linear_ops(OpSchemaTable& table) {
  table["Conv"] = {"Conv", 2, 3, 1, 1, infer_conv};
  table["ConvTranspose"] = {"ConvTranspose", 2, 3, 1, 1, infer_conv_transpose};
  table["Gemm"] = {"Gemm", 2, 3, 1, 1, infer_gemm};
  table["MatMul"] = {"MatMul", 2, 2, 1, 1, infer_matmul};
}

}  // namespace orchid
