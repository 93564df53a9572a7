// Shape functions of the elementwise op family: unary math, numpy-broadcast binary and
// variadic ops, comparisons and logic, Where, Clip, Cast. Dtype lists here must match
// what the reference kernels in runtime/reference/elementwise_kernels.cpp instantiate.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "ir/ops/op_families.hpp"

namespace orchid {

namespace {

// Only namespace-scope constants of this type may be captured: a braced list passed
// directly would leave the lambda pointing at a dead temporary array.
using DTypes = std::initializer_list<DType>;

// f16 is deliberately absent everywhere but Cast: it is a storage type, and models that
// compute in it must be cast to f32 first.
constexpr DTypes kFloat = {DType::F32, DType::F64};
constexpr DTypes kSignedNumeric = {DType::F32, DType::F64, DType::I64, DType::I32, DType::I8};
constexpr DTypes kNumeric = {DType::F32, DType::F64, DType::I64, DType::I32, DType::I8, DType::U8};
constexpr DTypes kNumericBool = {DType::F32, DType::F64, DType::I64, DType::I32,
                                 DType::I8,  DType::U8,  DType::Bool};
constexpr DTypes kFloatOrWideInt = {DType::F32, DType::F64, DType::I64, DType::I32};
constexpr DTypes kBool = {DType::Bool};

constexpr int kVariadic = std::numeric_limits<int>::max();

void add(OpSchemaTable& table, const std::string& op, int min_in, int max_in, ShapeFunction f) {
  table[op] = OpSchema{op, min_in, max_in, 1, 1, std::move(f)};
}

void require_same_dtype(const ShapeContext& ctx, std::size_t a, std::size_t b) {
  if (ctx.input_dtype(a) != ctx.input_dtype(b)) {
    ctx.fail("inputs {} and {} must have the same dtype, got {} and {}", a, b,
             dtype_name(ctx.input_dtype(a)), dtype_name(ctx.input_dtype(b)));
  }
}

// Output has the input's dtype and shape (or `out` dtype for predicates like IsNaN).
ShapeFunction unary(DTypes allowed, std::optional<DType> out = std::nullopt) {
  return [allowed, out](const ShapeContext& ctx) -> std::vector<TensorType> {
    ctx.require_dtype(0, allowed);
    TensorType t = ctx.input(0);
    if (out) t.dtype = *out;
    return {t};
  };
}

// Numpy broadcast of inputs of one dtype; `out` overrides the result dtype (comparisons).
ShapeFunction broadcasting(DTypes allowed, std::optional<DType> out = std::nullopt) {
  return [allowed, out](const ShapeContext& ctx) -> std::vector<TensorType> {
    ctx.require_dtype(0, allowed);
    Shape shape = ctx.input_shape(0);
    for (std::size_t i = 1; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) ctx.fail("input {} is missing", i);
      require_same_dtype(ctx, 0, i);
      shape = broadcast_shapes(shape, ctx.input_shape(i), ctx.node().describe());
    }
    return {{out.value_or(ctx.input_dtype(0)), shape}};
  };
}

std::vector<TensorType> infer_pow(const ShapeContext& ctx) {
  // The exponent may have its own dtype (e.g. f32 base, i64 exponent).
  ctx.require_dtype(0, kFloatOrWideInt);
  ctx.require_dtype(1, kFloatOrWideInt);
  return {{ctx.input_dtype(0),
           broadcast_shapes(ctx.input_shape(0), ctx.input_shape(1), ctx.node().describe())}};
}

std::vector<TensorType> infer_mod(const ShapeContext& ctx) {
  ctx.require_dtype(0, kNumeric);
  require_same_dtype(ctx, 0, 1);
  const std::int64_t fmod = ctx.node().attr_int("fmod", 0);
  if (fmod != 0 && fmod != 1) ctx.fail("attribute fmod must be 0 or 1, got {}", fmod);
  if (fmod == 0 && is_float(ctx.input_dtype(0))) {
    // Undefined before opset 28, which made it Python's floored remainder.
    ctx.unsupported("fmod=0 on floating-point inputs (dtype {}; the floored remainder of opset 28)",
                    dtype_name(ctx.input_dtype(0)));
  }
  return {{ctx.input_dtype(0),
           broadcast_shapes(ctx.input_shape(0), ctx.input_shape(1), ctx.node().describe())}};
}

std::vector<TensorType> infer_prelu(const ShapeContext& ctx) {
  ctx.require_dtype(0, kFloatOrWideInt);
  require_same_dtype(ctx, 0, 1);
  const Shape& x = ctx.input_shape(0);
  const Shape& slope = ctx.input_shape(1);
  // The slope broadcasts to X, never the other way round.
  if (slope.size() > x.size() || broadcast_shapes(x, slope, ctx.node().describe()) != x) {
    ctx.fail("slope shape {} does not broadcast unidirectionally to input shape {}",
             shape_to_string(slope), shape_to_string(x));
  }
  return {ctx.input(0)};
}

std::vector<TensorType> infer_where(const ShapeContext& ctx) {
  if (ctx.input_dtype(0) != DType::Bool) {
    ctx.fail("condition must be bool, got {}", dtype_name(ctx.input_dtype(0)));
  }
  ctx.require_dtype(1, kNumericBool);
  require_same_dtype(ctx, 1, 2);
  const std::string what = ctx.node().describe();
  Shape shape = broadcast_shapes(ctx.input_shape(0), ctx.input_shape(1), what);
  shape = broadcast_shapes(shape, ctx.input_shape(2), what);
  return {{ctx.input_dtype(1), shape}};
}

std::vector<TensorType> infer_clip(const ShapeContext& ctx) {
  if (ctx.node().has_attribute("min") || ctx.node().has_attribute("max")) {
    ctx.unsupported("min/max attributes (opset < 11 form); bounds must be inputs");
  }
  ctx.require_dtype(0, kNumeric);
  for (std::size_t i = 1; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    require_same_dtype(ctx, 0, i);
    if (shape_numel(ctx.input_shape(i)) != 1) {
      ctx.fail("bound input {} must be a scalar, got shape {}", i,
               shape_to_string(ctx.input_shape(i)));
    }
  }
  return {ctx.input(0)};
}

// ONNX TensorProto.DataType numbers orchid can represent.
std::optional<DType> onnx_dtype(std::int64_t code) {
  switch (code) {
    case 1:
      return DType::F32;
    case 2:
      return DType::U8;
    case 3:
      return DType::I8;
    case 6:
      return DType::I32;
    case 7:
      return DType::I64;
    case 9:
      return DType::Bool;
    case 10:
      return DType::F16;
    case 11:
      return DType::F64;
    case 16:
      return DType::BF16;
    default:
      return std::nullopt;
  }
}

std::vector<TensorType> infer_cast(const ShapeContext& ctx) {
  const std::int64_t to = ctx.node().required_int("to");
  const std::optional<DType> dtype = onnx_dtype(to);
  if (!dtype) ctx.unsupported("cast to ONNX data type {}", to);
  return {{*dtype, ctx.input_shape(0)}};
}

std::vector<TensorType> infer_cast_like(const ShapeContext& ctx) {
  return {{ctx.input_dtype(1), ctx.input_shape(0)}};
}

std::vector<TensorType> infer_gelu(const ShapeContext& ctx) {
  const std::string approximate = ctx.node().attr_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    ctx.fail("approximate must be 'none' or 'tanh', got '{}'", approximate);
  }
  return unary(kFloat)(ctx);
}

std::vector<TensorType> infer_is_inf(const ShapeContext& ctx) {
  ctx.require_dtype(0, kFloat);
  return {{DType::Bool, ctx.input_shape(0)}};
}

}  // namespace

void register_elementwise_ops(OpSchemaTable& table) {
  // Unary float math.
  for (const char* op : {"Sigmoid",
                         "HardSigmoid",
                         "HardSwish",
                         "Tanh",
                         "Softplus",
                         "Softsign",
                         "Erf",
                         "Exp",
                         "Log",
                         "Sqrt",
                         "Reciprocal",
                         "Floor",
                         "Ceil",
                         "Round",
                         "Sin",
                         "Cos",
                         "Tan",
                         "Asin",
                         "Acos",
                         "Atan",
                         "Sinh",
                         "Cosh",
                         "Asinh",
                         "Acosh",
                         "Atanh",
                         "Elu",
                         "Selu",
                         "Celu",
                         "ThresholdedRelu",
                         "Mish",
                         "Swish"}) {
    add(table, op, 1, 1, unary(kFloat));
  }
  add(table, "LeakyRelu", 1, 1, unary(kFloat));
  add(table, "Gelu", 1, 1, infer_gelu);
  add(table, "Relu", 1, 1, unary(kSignedNumeric));
  add(table, "Shrink", 1, 1, unary(kFloatOrWideInt));
  add(table, "Neg", 1, 1, unary(kSignedNumeric));
  add(table, "Abs", 1, 1, unary(kNumeric));
  add(table, "Sign", 1, 1, unary(kNumeric));
  add(table, "Not", 1, 1, unary(kBool));
  add(table, "IsNaN", 1, 1, unary(kFloat, DType::Bool));
  add(table, "IsInf", 1, 1, infer_is_inf);

  // Binary arithmetic, numpy broadcasting.
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    add(table, op, 2, 2, broadcasting(kNumeric));
  }
  add(table, "Pow", 2, 2, infer_pow);
  add(table, "Mod", 2, 2, infer_mod);
  add(table, "PRelu", 2, 2, infer_prelu);

  // Variadic folds.
  add(table, "Max", 1, kVariadic, broadcasting(kNumeric));
  add(table, "Min", 1, kVariadic, broadcasting(kNumeric));
  add(table, "Sum", 1, kVariadic, broadcasting(kNumeric));
  add(table, "Mean", 1, kVariadic, broadcasting(kFloat));

  // Comparisons and logic produce bool.
  add(table, "Equal", 2, 2, broadcasting(kNumericBool, DType::Bool));
  for (const char* op : {"Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    add(table, op, 2, 2, broadcasting(kNumeric, DType::Bool));
  }
  for (const char* op : {"And", "Or", "Xor"}) add(table, op, 2, 2, broadcasting(kBool));

  add(table, "Where", 3, 3, infer_where);
  add(table, "Clip", 1, 3, infer_clip);
  add(table, "Cast", 1, 1, infer_cast);
  add(table, "CastLike", 2, 2, infer_cast_like);
}

}  // namespace orchid
