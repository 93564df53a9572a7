// Shape functions of the constant op family: Shape, Size, ConstantOfShape, Range,
// Identity, Dropout (inference), EyeLike. All work on any dtype. (Constant nodes are
// folded into graph constants by the importer.)
#include <algorithm>
#include <cmath>

#include "ir/ops/op_families.hpp"
#include "util/checked_math.hpp"

namespace orchid {

namespace {

// ONNX TensorProto element type codes for the dtypes orchid has.
bool dtype_from_onnx(std::int64_t code, DType& out) {
  switch (code) {
    case 1:
      out = DType::F32;
      return true;
    case 2:
      out = DType::U8;
      return true;
    case 3:
      out = DType::I8;
      return true;
    case 6:
      out = DType::I32;
      return true;
    case 7:
      out = DType::I64;
      return true;
    case 9:
      out = DType::Bool;
      return true;
    case 10:
      out = DType::F16;
      return true;
    case 11:
      out = DType::F64;
      return true;
    default:
      return false;
  }
}

std::vector<TensorType> infer_shape(const ShapeContext& ctx) {
  const auto rank = static_cast<std::int64_t>(ctx.input_shape(0).size());
  auto clamp_axis = [rank](std::int64_t a) {
    if (a < 0) a += rank;
    return std::clamp<std::int64_t>(a, 0, rank);
  };
  const std::int64_t start = clamp_axis(ctx.node().attr_int("start", 0));
  const std::int64_t end = clamp_axis(ctx.node().attr_int("end", rank));
  return {{DType::I64, {std::max<std::int64_t>(0, end - start)}}};
}

std::vector<TensorType> infer_size(const ShapeContext& ctx) {
  (void)ctx.input(0);
  return {{DType::I64, {}}};
}

std::vector<TensorType> infer_constant_of_shape(const ShapeContext& ctx) {
  const Tensor& shape = ctx.required_constant(0, "output shape");
  if (shape.dtype() != DType::I64 || shape.rank() != 1) {
    ctx.fail("shape input must be a 1-D int64 tensor, got {} {}", dtype_name(shape.dtype()),
             shape_to_string(shape.shape()));
  }
  Shape out = shape.to_int64s();
  for (auto d : out) {
    if (d < 0) ctx.fail("shape {} has a negative dimension", shape_to_string(out));
  }
  DType dtype = DType::F32;
  if (ctx.node().has_attribute("value")) {
    const Tensor& value = ctx.node().required_tensor("value");
    if (value.numel() != 1) ctx.fail("value must hold exactly one element");
    dtype = value.dtype();
  }
  return {{dtype, out}};
}

std::vector<TensorType> infer_range(const ShapeContext& ctx) {
  const Tensor& start = ctx.required_constant(0, "start");
  const Tensor& limit = ctx.required_constant(1, "limit");
  const Tensor& delta = ctx.required_constant(2, "delta");
  const DType dtype = start.dtype();
  ctx.require_dtype(0, {DType::F32, DType::F64, DType::I64, DType::I32});
  if (limit.dtype() != dtype || delta.dtype() != dtype) ctx.fail("inputs must share one dtype");
  if (start.numel() != 1 || limit.numel() != 1 || delta.numel() != 1) {
    ctx.fail("start, limit and delta must be scalars");
  }
  std::int64_t n = 0;
  if (is_integer(dtype)) {
    const std::int64_t s = start.get_as_int64(0), l = limit.get_as_int64(0),
                       d = delta.get_as_int64(0);
    if (d == 0) ctx.fail("delta is zero");
    // In 128 bits: limit - start may not fit int64.
    const __int128 span = static_cast<__int128>(l) - s;
    const __int128 count =
        d > 0 ? (span + d - 1) / d
              : (-span + (-static_cast<__int128>(d)) - 1) / (-static_cast<__int128>(d));
    if (count > kMaxElements) ctx.fail("has too many elements");
    n = count > 0 ? static_cast<std::int64_t>(count) : 0;
  } else {
    const double d = delta.get_as_double(0);
    if (d == 0 || !std::isfinite(d)) ctx.fail("delta must be finite and non-zero");
    const double count = std::ceil((limit.get_as_double(0) - start.get_as_double(0)) / d);
    if (!(count <= static_cast<double>(kMaxElements))) ctx.fail("has too many (or NaN) elements");
    n = count > 0 ? static_cast<std::int64_t>(count) : 0;
  }
  return {{dtype, {std::max<std::int64_t>(n, 0)}}};
}

std::vector<TensorType> infer_identity(const ShapeContext& ctx) {
  return {ctx.input(0)};
}

std::vector<TensorType> infer_dropout(const ShapeContext& ctx) {
  if (ctx.node().outputs.size() > 1 && !ctx.node().outputs[1].empty()) {
    ctx.unsupported("the mask output");
  }
  if (ctx.has_input(2)) {
    const Tensor* training = ctx.constant(2);
    if (!training) ctx.unsupported("training_mode computed at run time");
    if (training->numel() != 1) ctx.fail("training_mode must be a scalar");
    if (training->get_as_double(0) != 0.0) ctx.unsupported("training_mode=true");
  }
  const TensorType x = ctx.input(0);
  return {x, {DType::Bool, x.shape}};
}

std::vector<TensorType> infer_eye_like(const ShapeContext& ctx) {
  const TensorType x = ctx.input(0);
  if (x.shape.size() != 2) ctx.fail("input must be 2-D, got {}", shape_to_string(x.shape));
  DType dtype = x.dtype;
  if (ctx.node().has_attribute("dtype")) {
    const std::int64_t code = ctx.node().attr_int("dtype", 1);
    if (!dtype_from_onnx(code, dtype)) ctx.unsupported("dtype code {}", code);
  }
  return {{dtype, x.shape}};
}

}  // namespace

void register_constant_ops(OpSchemaTable& table) {
  table["Shape"] = {"Shape", 1, 1, 1, 1, infer_shape};
  table["Size"] = {"Size", 1, 1, 1, 1, infer_size};
  table["ConstantOfShape"] = {"ConstantOfShape", 1, 1, 1, 1, infer_constant_of_shape};
  table["Range"] = {"Range", 3, 3, 1, 1, infer_range};
  table["Identity"] = {"Identity", 1, 1, 1, 1, infer_identity};
  table["Dropout"] = {"Dropout", 1, 3, 1, 2, infer_dropout};
  table["EyeLike"] = {"EyeLike", 1, 1, 1, 1, infer_eye_like};
}

}  // namespace orchid
