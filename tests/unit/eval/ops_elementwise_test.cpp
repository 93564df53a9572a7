// Elementwise family: shape inference (broadcasting, dtype rules, refusals) and
// known-value checks of the reference kernels. Expected values come from hand
// computation or from the closed-form formula evaluated in the test with <cmath>.
// Default tolerance: rtol 1e-5, atol 1e-6 (f32 rounding of double-evaluated formulas).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "op_test_util.hpp"
#include "util/error.hpp"

namespace orchid {
namespace {

using testing::f32;
using testing::i64;
using testing::run_single_op;
using testing::single_op_graph;
using testing::tensors_close;

Tensor i32(Shape shape, std::vector<std::int32_t> v) {
  return Tensor::from_vector<std::int32_t>(std::move(shape), v);
}
Tensor boolean(Shape shape, std::vector<bool> v) {
  return Tensor::from_vector<bool>(std::move(shape), v);
}
Tensor f64(Shape shape, std::vector<double> v) {
  return Tensor::from_vector<double>(std::move(shape), v);
}

Tensor run1(const std::string& op, Tensor x, std::map<std::string, Attribute> attrs = {}) {
  return run_single_op(op, {{"x", std::move(x)}}, std::move(attrs))[0];
}
Tensor run2(const std::string& op, Tensor a, Tensor b) {
  return run_single_op(op, {{"a", std::move(a)}, {"b", std::move(b)}})[0];
}

// Output type of a one-node graph.
TensorInfo infer(const std::string& op, const std::vector<testing::OpInput>& inputs,
                 std::map<std::string, Attribute> attrs = {}) {
  Graph g = single_op_graph(op, inputs, std::move(attrs));
  return g.tensor("y0");
}

// Applies `f` to every element of x (f32) to build an expected tensor.
template <typename F>
Tensor map_f32(const Tensor& x, F f) {
  std::vector<float> out;
  for (float v : x.values<float>()) out.push_back(static_cast<float>(f(static_cast<double>(v))));
  return f32(x.shape(), out);
}

const Tensor kSample = f32({2, 3}, {-2.5f, -1.0f, -0.25f, 0.0f, 0.75f, 3.0f});

// ---------------------------------------------------------------------------------------
// Shape inference.

TEST(ElementwiseShapes, UnaryKeepsTypeAndShape) {
  TensorInfo t = infer("Relu", {{"x", Tensor(DType::F32, {2, 3, 4})}});
  EXPECT_EQ(t.dtype, DType::F32);
  EXPECT_EQ(t.shape, (Shape{2, 3, 4}));
  EXPECT_EQ(infer("IsNaN", {{"x", Tensor(DType::F64, {5})}}).dtype, DType::Bool);
}

TEST(ElementwiseShapes, BinaryBroadcasts) {
  TensorInfo t =
      infer("Add", {{"a", Tensor(DType::F32, {2, 1, 4})}, {"b", Tensor(DType::F32, {3, 1})}});
  EXPECT_EQ(t.shape, (Shape{2, 3, 4}));
  EXPECT_EQ(infer("Mul", {{"a", Tensor(DType::I64, {})}, {"b", Tensor(DType::I64, {5})}}).shape,
            (Shape{5}));
  TensorInfo eq =
      infer("Equal", {{"a", Tensor(DType::I32, {4, 1})}, {"b", Tensor(DType::I32, {1, 6})}});
  EXPECT_EQ(eq.dtype, DType::Bool);
  EXPECT_EQ(eq.shape, (Shape{4, 6}));
}

TEST(ElementwiseShapes, VariadicBroadcastsAllInputs) {
  TensorInfo t = infer("Max", {{"a", Tensor(DType::F32, {3, 1})},
                               {"b", Tensor(DType::F32, {1, 4})},
                               {"c", Tensor(DType::F32, {2, 1, 1})}});
  EXPECT_EQ(t.shape, (Shape{2, 3, 4}));
}

TEST(ElementwiseShapes, WhereBroadcastsThreeWays) {
  TensorInfo t = infer("Where", {{"c", Tensor(DType::Bool, {2, 1, 1})},
                                 {"x", Tensor(DType::I64, {3, 1})},
                                 {"y", Tensor(DType::I64, {4})}});
  EXPECT_EQ(t.dtype, DType::I64);
  EXPECT_EQ(t.shape, (Shape{2, 3, 4}));
}

TEST(ElementwiseShapes, IncompatibleBroadcastNamesNode) {
  try {
    infer("Add", {{"a", Tensor(DType::F32, {2, 3})}, {"b", Tensor(DType::F32, {4})}});
    FAIL() << "expected an error";
  } catch (const UnsupportedError&) {
    FAIL() << "a malformed model must not be reported as unsupported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("n0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("2x3"), std::string::npos) << e.what();
  }
}

TEST(ElementwiseShapes, MixedDtypesFail) {
  EXPECT_THROW(infer("Add", {{"a", Tensor(DType::F32, {2})}, {"b", Tensor(DType::I64, {2})}}),
               Error);
}

// f16 goes where f32 does (computed in f32 by the reference interpreter); other
// dtypes an op does not define stay refused.
TEST(ElementwiseShapes, F16ArithmeticIsAcceptedOthersRefused) {
  EXPECT_NO_THROW(infer("Add", {{"a", Tensor(DType::F16, {2})}, {"b", Tensor(DType::F16, {2})}}));
  EXPECT_NO_THROW(infer("Exp", {{"x", Tensor(DType::BF16, {2})}}));
  EXPECT_THROW(infer("Exp", {{"x", Tensor(DType::I64, {2})}}), UnsupportedError);
  EXPECT_THROW(infer("Not", {{"x", Tensor(DType::F32, {2})}}), UnsupportedError);
}

TEST(ElementwiseShapes, PReluSlopeBroadcastsOneWay) {
  EXPECT_EQ(
      infer("PRelu", {{"x", Tensor(DType::F32, {2, 3, 4})}, {"s", Tensor(DType::F32, {3, 1})}})
          .shape,
      (Shape{2, 3, 4}));
  EXPECT_THROW(
      infer("PRelu", {{"x", Tensor(DType::F32, {3, 1})}, {"s", Tensor(DType::F32, {3, 4})}}),
      Error);
}

TEST(ElementwiseShapes, WhereNeedsBoolCondition) {
  EXPECT_THROW(infer("Where", {{"c", Tensor(DType::F32, {2})},
                               {"x", Tensor(DType::F32, {2})},
                               {"y", Tensor(DType::F32, {2})}}),
               Error);
}

TEST(ElementwiseShapes, CastTargets) {
  EXPECT_EQ(infer("Cast", {{"x", Tensor(DType::F32, {2})}}, {{"to", std::int64_t{7}}}).dtype,
            DType::I64);
  EXPECT_EQ(infer("Cast", {{"x", Tensor(DType::F16, {2})}}, {{"to", std::int64_t{1}}}).dtype,
            DType::F32);
  EXPECT_EQ(infer("Cast", {{"x", Tensor(DType::F32, {2})}}, {{"to", std::int64_t{10}}}).dtype,
            DType::F16);
  EXPECT_EQ(infer("Cast", {{"x", Tensor(DType::F32, {2})}}, {{"to", std::int64_t{16}}}).dtype,
            DType::BF16);
  // 8 = string: not representable.
  EXPECT_THROW(infer("Cast", {{"x", Tensor(DType::F32, {2})}}, {{"to", std::int64_t{8}}}),
               UnsupportedError);
  EXPECT_THROW(infer("Cast", {{"x", Tensor(DType::F32, {2})}}), Error);  // `to` is required
}

TEST(ElementwiseShapes, ClipRefusesAttributeFormAndNonScalarBounds) {
  EXPECT_THROW(infer("Clip", {{"x", Tensor(DType::F32, {2})}}, {{"min", 0.0f}}), UnsupportedError);
  EXPECT_THROW(infer("Clip", {{"x", Tensor(DType::F32, {2})}, {"lo", Tensor(DType::F32, {2})}}),
               Error);
}

TEST(ElementwiseShapes, ModFloatNeedsFmod) {
  EXPECT_THROW(infer("Mod", {{"a", Tensor(DType::F32, {2})}, {"b", Tensor(DType::F32, {2})}}),
               Error);
  EXPECT_EQ(infer("Mod", {{"a", Tensor(DType::F32, {2})}, {"b", Tensor(DType::F32, {2})}},
                  {{"fmod", std::int64_t{1}}})
                .dtype,
            DType::F32);
}

// ---------------------------------------------------------------------------------------
// Unary kernels.

TEST(ElementwiseKernels, Activations) {
  EXPECT_TRUE(tensors_close(run1("Relu", kSample),
                            map_f32(kSample, [](double x) { return std::max(x, 0.0); })));
  EXPECT_TRUE(tensors_close(run1("LeakyRelu", kSample, {{"alpha", 0.1f}}),
                            map_f32(kSample, [](double x) { return x < 0 ? 0.1 * x : x; })));
  EXPECT_TRUE(tensors_close(run1("LeakyRelu", kSample),
                            map_f32(kSample, [](double x) { return x < 0 ? 0.01 * x : x; })));
  EXPECT_TRUE(tensors_close(run1("Sigmoid", kSample),
                            map_f32(kSample, [](double x) { return 1.0 / (1.0 + std::exp(-x)); })));
  EXPECT_TRUE(tensors_close(
      run1("HardSigmoid", kSample, {{"alpha", 0.5f}, {"beta", 0.25f}}),
      map_f32(kSample, [](double x) { return std::min(1.0, std::max(0.0, 0.5 * x + 0.25)); })));
  EXPECT_TRUE(tensors_close(run1("HardSwish", kSample), map_f32(kSample, [](double x) {
                              return x * std::min(1.0, std::max(0.0, x / 6 + 0.5));
                            })));
  EXPECT_TRUE(tensors_close(run1("Tanh", kSample),
                            map_f32(kSample, [](double x) { return std::tanh(x); })));
  EXPECT_TRUE(tensors_close(run1("Softplus", kSample),
                            map_f32(kSample, [](double x) { return std::log(1 + std::exp(x)); })));
  EXPECT_TRUE(tensors_close(run1("Elu", kSample, {{"alpha", 2.0f}}), map_f32(kSample, [](double x) {
                              return x < 0 ? 2.0 * (std::exp(x) - 1) : x;
                            })));
  const double a = 1.67326319217681884765625, g = 1.05070102214813232421875;
  EXPECT_TRUE(tensors_close(run1("Selu", kSample), map_f32(kSample, [&](double x) {
                              return g * (x <= 0 ? a * (std::exp(x) - 1) : x);
                            })));
}

TEST(ElementwiseKernels, Shrink) {
  // |x| <= lambd -> 0, otherwise x moves toward 0 by bias.
  EXPECT_TRUE(tensors_close(
      run1("Shrink", f32({5}, {-2, -0.5f, 0, 1, 3}), {{"lambd", 0.75f}, {"bias", 0.5f}}),
      f32({5}, {-1.5f, 0, 0, 0.5f, 2.5f})));
  EXPECT_EQ(run1("Shrink", i64({3}, {-3, 0, 4}), {{"lambd", 1.0f}, {"bias", 1.0f}}),
            i64({3}, {-2, 0, 3}));
}

TEST(ElementwiseKernels, HandComputedActivationValues) {
  // sigmoid(0) = 0.5, relu(-1) = 0, hardswish(3) = 3, hardswish(-3) = 0.
  EXPECT_TRUE(tensors_close(run1("Sigmoid", f32({1}, {0.0f})), f32({1}, {0.5f})));
  EXPECT_TRUE(tensors_close(run1("HardSwish", f32({3}, {3.0f, -3.0f, 1.0f})),
                            f32({3}, {3.0f, 0.0f, 1.0f * (1.0f / 6 + 0.5f)})));
  // Large |x| must not overflow: sigmoid(+-1000) = 1 / 0, softplus(1000) = 1000.
  EXPECT_TRUE(tensors_close(run1("Sigmoid", f32({2}, {1000.0f, -1000.0f})), f32({2}, {1, 0})));
  EXPECT_TRUE(tensors_close(run1("Softplus", f32({2}, {1000.0f, -1000.0f})), f32({2}, {1000, 0})));
}

TEST(ElementwiseKernels, MathFunctions) {
  const Tensor pos = f32({4}, {0.25f, 1.0f, 2.0f, 9.0f});
  EXPECT_TRUE(
      tensors_close(run1("Exp", kSample), map_f32(kSample, [](double x) { return std::exp(x); })));
  EXPECT_TRUE(tensors_close(run1("Log", pos), map_f32(pos, [](double x) { return std::log(x); })));
  EXPECT_TRUE(tensors_close(run1("Sqrt", pos), f32({4}, {0.5f, 1.0f, std::sqrt(2.0f), 3.0f})));
  EXPECT_TRUE(tensors_close(run1("Reciprocal", pos), f32({4}, {4.0f, 1.0f, 0.5f, 1.0f / 9})));
  EXPECT_TRUE(
      tensors_close(run1("Erf", kSample), map_f32(kSample, [](double x) { return std::erf(x); })));
  EXPECT_TRUE(
      tensors_close(run1("Sin", kSample), map_f32(kSample, [](double x) { return std::sin(x); })));
  EXPECT_TRUE(
      tensors_close(run1("Cos", kSample), map_f32(kSample, [](double x) { return std::cos(x); })));
  EXPECT_TRUE(tensors_close(run1("Floor", kSample), f32({2, 3}, {-3, -1, -1, 0, 0, 3})));
  EXPECT_TRUE(tensors_close(run1("Ceil", kSample), f32({2, 3}, {-2, -1, -0.0f, 0, 1, 3})));
  EXPECT_TRUE(tensors_close(run1("Abs", kSample), f32({2, 3}, {2.5f, 1, 0.25f, 0, 0.75f, 3})));
  EXPECT_TRUE(tensors_close(run1("Neg", kSample), f32({2, 3}, {2.5f, 1, 0.25f, 0, -0.75f, -3})));
  EXPECT_TRUE(tensors_close(run1("Sign", kSample), f32({2, 3}, {-1, -1, -1, 0, 1, 1})));
  // Round: halves go to the even neighbour.
  EXPECT_TRUE(tensors_close(run1("Round", f32({5}, {0.5f, 1.5f, 2.5f, -0.5f, 2.6f})),
                            f32({5}, {0, 2, 2, -0.0f, 3})));
  // Log(0) = -inf, Sqrt(-1) = NaN: IEEE semantics, no exception.
  Tensor edge = run1("Log", f32({1}, {0.0f}));
  EXPECT_TRUE(std::isinf(edge.values<float>()[0]) && edge.values<float>()[0] < 0);
  EXPECT_TRUE(std::isnan(run1("Sqrt", f32({1}, {-1.0f})).values<float>()[0]));
}

TEST(ElementwiseKernels, DoublePrecisionIsKept) {
  // 1 + 1e-12 is not representable in f32; the f64 path must keep it.
  Tensor y = run2("Add", f64({1}, {1.0}), f64({1}, {1e-12}));
  EXPECT_EQ(y.dtype(), DType::F64);
  EXPECT_EQ(y.values<double>()[0], 1.0 + 1e-12);
  EXPECT_DOUBLE_EQ(run1("Exp", f64({1}, {1.0})).values<double>()[0], std::exp(1.0));
}

TEST(ElementwiseKernels, IntegerUnary) {
  EXPECT_EQ(run1("Neg", i64({3}, {5, -7, 0})), i64({3}, {-5, 7, 0}));
  EXPECT_EQ(run1("Abs", i32({3}, {5, -7, 0})), i32({3}, {5, 7, 0}));
  EXPECT_EQ(run1("Relu", i64({3}, {5, -7, 0})), i64({3}, {5, 0, 0}));
  EXPECT_EQ(run1("Sign", i64({3}, {5, -7, 0})), i64({3}, {1, -1, 0}));
}

TEST(ElementwiseKernels, LogicalOps) {
  const Tensor a = boolean({4}, {true, true, false, false});
  const Tensor b = boolean({4}, {true, false, true, false});
  EXPECT_EQ(run1("Not", a), boolean({4}, {false, false, true, true}));
  EXPECT_EQ(run2("And", a, b), boolean({4}, {true, false, false, false}));
  EXPECT_EQ(run2("Or", a, b), boolean({4}, {true, true, true, false}));
  EXPECT_EQ(run2("Xor", a, b), boolean({4}, {false, true, true, false}));
  EXPECT_EQ(run2("Equal", a, b), boolean({4}, {true, false, false, true}));
  // Broadcast: [2,1] and [3].
  EXPECT_EQ(run2("And", boolean({2, 1}, {true, false}), boolean({3}, {true, false, true})),
            boolean({2, 3}, {true, false, true, false, false, false}));
}

// ---------------------------------------------------------------------------------------
// Binary kernels.

TEST(ElementwiseKernels, BroadcastArithmetic) {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor row = f32({3}, {10, 20, 30});
  const Tensor col = f32({2, 1}, {100, 200});
  EXPECT_TRUE(tensors_close(run2("Add", a, row), f32({2, 3}, {11, 22, 33, 14, 25, 36})));
  EXPECT_TRUE(tensors_close(run2("Sub", a, col), f32({2, 3}, {-99, -98, -97, -196, -195, -194})));
  EXPECT_TRUE(
      tensors_close(run2("Mul", row, col), f32({2, 3}, {1000, 2000, 3000, 2000, 4000, 6000})));
  EXPECT_TRUE(
      tensors_close(run2("Div", a, f32({}, {2})), f32({2, 3}, {0.5f, 1, 1.5f, 2, 2.5f, 3})));
  // Rank-3 against rank-2 with 1s on both sides: [2,1,3] op [2,1] -> [2,2,3].
  Tensor big = run2("Add", f32({2, 1, 3}, {0, 1, 2, 3, 4, 5}), f32({2, 1}, {10, 20}));
  EXPECT_TRUE(tensors_close(big, f32({2, 2, 3}, {10, 11, 12, 20, 21, 22, 13, 14, 15, 23, 24, 25})));
}

TEST(ElementwiseKernels, IntegerArithmetic) {
  const Tensor a = i64({4}, {7, -7, 7, -7});
  const Tensor b = i64({4}, {2, 2, -2, -2});
  EXPECT_EQ(run2("Add", a, b), i64({4}, {9, -5, 5, -9}));
  EXPECT_EQ(run2("Sub", a, b), i64({4}, {5, -9, 9, -5}));
  EXPECT_EQ(run2("Mul", a, b), i64({4}, {14, -14, -14, 14}));
  // Integer division truncates toward zero, like C.
  EXPECT_EQ(run2("Div", a, b), i64({4}, {3, -3, -3, 3}));
  EXPECT_EQ(run2("Div", i32({2}, {9, -9}), i32({}, {4})), i32({2}, {2, -2}));
  EXPECT_EQ(run2("Max", a, b), i64({4}, {7, 2, 7, -2}));
  EXPECT_EQ(run2("Min", a, b), i64({4}, {2, -7, -2, -7}));
  // Shape arithmetic as exporters write it: shape[0] * shape[1] with a broadcast scalar.
  EXPECT_EQ(run2("Mul", i64({2}, {3, 4}), i64({}, {2})), i64({2}, {6, 8}));
  EXPECT_THROW(run2("Div", i64({1}, {1}), i64({1}, {0})), Error);
  // Overflow wraps instead of being undefined.
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(run2("Add", i64({1}, {big}), i64({1}, {1})),
            i64({1}, {std::numeric_limits<std::int64_t>::min()}));
}

TEST(ElementwiseKernels, Pow) {
  EXPECT_TRUE(tensors_close(run2("Pow", f32({3}, {2, 3, 4}), f32({3}, {3, 0.5f, -1})),
                            f32({3}, {8, std::sqrt(3.0f), 0.25f})));
  // Mixed types: f32 base, i64 exponent; output keeps the base dtype.
  EXPECT_TRUE(tensors_close(run2("Pow", f32({2}, {2, -3}), i64({}, {2})), f32({2}, {4, 9})));
  EXPECT_EQ(run2("Pow", i64({3}, {2, -3, 10}), i64({3}, {10, 3, 0})), i64({3}, {1024, -27, 1}));
  EXPECT_EQ(run2("Pow", i32({2}, {4, 2}), f32({2}, {0.5f, 3.0f})), i32({2}, {2, 8}));
}

TEST(ElementwiseKernels, Mod) {
  const Tensor a = i64({4}, {7, -7, 7, -7});
  const Tensor b = i64({4}, {3, 3, -3, -3});
  // fmod=0: result takes the divisor's sign (Python %).
  EXPECT_EQ(run_single_op("Mod", {{"a", a}, {"b", b}})[0], i64({4}, {1, 2, -2, -1}));
  // fmod=1: result takes the dividend's sign (C fmod).
  EXPECT_EQ(run_single_op("Mod", {{"a", a}, {"b", b}}, {{"fmod", std::int64_t{1}}})[0],
            i64({4}, {1, -1, 1, -1}));
  EXPECT_TRUE(
      tensors_close(run_single_op("Mod", {{"a", f32({2}, {5.5f, -5.5f})}, {"b", f32({}, {2})}},
                                  {{"fmod", std::int64_t{1}}})[0],
                    f32({2}, {1.5f, -1.5f})));
}

TEST(ElementwiseKernels, VariadicMaxMinSumMean) {
  const Tensor a = f32({3}, {1, 5, 3});
  const Tensor b = f32({3}, {4, 2, 6});
  const Tensor c = f32({}, {3.5f});
  auto run3 = [&](const std::string& op) {
    return run_single_op(op, {{"a", a}, {"b", b}, {"c", c}})[0];
  };
  EXPECT_TRUE(tensors_close(run3("Max"), f32({3}, {4, 5, 6})));
  EXPECT_TRUE(tensors_close(run3("Min"), f32({3}, {1, 2, 3})));
  EXPECT_TRUE(tensors_close(run3("Sum"), f32({3}, {8.5f, 10.5f, 12.5f})));
  EXPECT_TRUE(tensors_close(run3("Mean"), f32({3}, {8.5f / 3, 10.5f / 3, 12.5f / 3})));
  // One input is the identity.
  EXPECT_TRUE(tensors_close(run_single_op("Max", {{"a", a}})[0], a));
  // NaN propagates through Max like numpy.maximum.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor m = run2("Max", f32({2}, {nan, 1}), f32({2}, {1, nan}));
  EXPECT_TRUE(std::isnan(m.values<float>()[0]) && std::isnan(m.values<float>()[1]));
}

TEST(ElementwiseKernels, Comparisons) {
  const Tensor a = f32({2, 2}, {1, 2, 3, 4});
  const Tensor b = f32({2}, {2, 3});
  EXPECT_EQ(run2("Equal", a, b), boolean({2, 2}, {false, false, false, false}));
  EXPECT_EQ(run2("Less", a, b), boolean({2, 2}, {true, true, false, false}));
  EXPECT_EQ(run2("Greater", a, b), boolean({2, 2}, {false, false, true, true}));
  EXPECT_EQ(run2("LessOrEqual", a, b), boolean({2, 2}, {true, true, false, false}));
  EXPECT_EQ(run2("GreaterOrEqual", a, f32({}, {2})), boolean({2, 2}, {false, true, true, true}));
  EXPECT_EQ(run2("Equal", i64({3}, {1, 2, 3}), i64({}, {2})), boolean({3}, {false, true, false}));
  EXPECT_EQ(run2("Less", i32({2}, {-1, 5}), i32({2}, {0, 5})), boolean({2}, {true, false}));
}

TEST(ElementwiseKernels, PRelu) {
  // Per-channel slope [C,1,1] on [1,2,1,2].
  Tensor y = run2("PRelu", f32({1, 2, 1, 2}, {-1, 2, -3, 4}), f32({2, 1, 1}, {0.5f, 0.25f}));
  EXPECT_TRUE(tensors_close(y, f32({1, 2, 1, 2}, {-0.5f, 2, -0.75f, 4})));
}

TEST(ElementwiseKernels, Where) {
  Tensor y = run_single_op(
      "Where",
      {{"c", boolean({2, 1}, {true, false})}, {"x", f32({3}, {1, 2, 3})}, {"y", f32({}, {-1})}})[0];
  EXPECT_TRUE(tensors_close(y, f32({2, 3}, {1, 2, 3, -1, -1, -1})));
  Tensor yi = run_single_op("Where", {{"c", boolean({3}, {false, true, false})},
                                      {"x", i64({3}, {1, 2, 3})},
                                      {"y", i64({3}, {7, 8, 9})}})[0];
  EXPECT_EQ(yi, i64({3}, {7, 2, 9}));
  Tensor yb = run_single_op("Where", {{"c", boolean({2}, {false, true})},
                                      {"x", boolean({2}, {true, true})},
                                      {"y", boolean({2}, {false, false})}})[0];
  EXPECT_EQ(yb, boolean({2}, {false, true}));
}

TEST(ElementwiseKernels, Clip) {
  const Tensor x = f32({5}, {-3, -1, 0, 1, 3});
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(tensors_close(
      run_single_op("Clip", {{"x", x}, {"lo", f32({}, {-1.5f})}, {"hi", f32({}, {2})}})[0],
      f32({5}, {-1.5f, -1, 0, 1, 2})));
  // Only max given (min omitted with ""), and no bounds at all.
  EXPECT_TRUE(
      tensors_close(run_single_op("Clip", {{"x", x}, {"", Tensor()}, {"hi", f32({}, {0})}})[0],
                    f32({5}, {-3, -1, 0, 0, 0})));
  EXPECT_TRUE(tensors_close(run_single_op("Clip", {{"x", f32({2}, {-inf, inf})}})[0],
                            f32({2}, {-inf, inf})));
  // Bounds as runtime int64 inputs.
  EXPECT_EQ(
      run_single_op("Clip",
                    {{"x", i64({3}, {-5, 5, 50})}, {"lo", i64({}, {0})}, {"hi", i64({}, {10})}})[0],
      i64({3}, {0, 5, 10}));
}

TEST(ElementwiseKernels, Cast) {
  const Tensor x = f32({4}, {-1.7f, 0.0f, 2.9f, 65504.0f});
  EXPECT_EQ(run1("Cast", x, {{"to", std::int64_t{7}}}), i64({4}, {-1, 0, 2, 65504}));
  EXPECT_EQ(run1("Cast", x, {{"to", std::int64_t{9}}}), boolean({4}, {true, false, true, true}));
  Tensor half = run1("Cast", x, {{"to", std::int64_t{10}}});
  EXPECT_EQ(half.dtype(), DType::F16);
  // Round trip through f16: values representable in f16 survive (-1.7 rounds).
  Tensor back = run1("Cast", half, {{"to", std::int64_t{1}}});
  EXPECT_TRUE(tensors_close(back, f32({4}, {-1.7f, 0, 2.9f, 65504}), 1e-3, 0));
  EXPECT_TRUE(
      tensors_close(run1("Cast", i64({2}, {3, -4}), {{"to", std::int64_t{1}}}), f32({2}, {3, -4})));
  EXPECT_EQ(run1("Cast", boolean({2}, {true, false}), {{"to", std::int64_t{6}}}), i32({2}, {1, 0}));
  Tensor like = run_single_op("CastLike", {{"x", x}, {"t", f64({1}, {0})}})[0];
  EXPECT_EQ(like.dtype(), DType::F64);
}

TEST(ElementwiseKernels, EmptyTensorsAreFine) {
  Tensor y = run2("Add", f32({0, 3}, {}), f32({3}, {1, 2, 3}));
  EXPECT_EQ(y.shape(), (Shape{0, 3}));
}

}  // namespace
}  // namespace orchid
