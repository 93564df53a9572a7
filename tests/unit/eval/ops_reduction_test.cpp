// Reduction family: Reduce* (axes as attribute or constant input, keepdims,
// noop_with_empty_axes), ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax. Expected values are
// hand-computed or evaluated in the test from the defining formula.
// Default tolerance: rtol 1e-5, atol 1e-6.
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
using testing::OpInput;
using testing::run_single_op;
using testing::single_op_graph;
using testing::tensors_close;

using Attrs = std::map<std::string, Attribute>;

// 2x3x2 input: value = 100*i + 10*j + k makes every reduced sum easy to check.
const Tensor kCube = f32({2, 3, 2}, {0, 1, 10, 11, 20, 21, 100, 101, 110, 111, 120, 121});

Tensor reduce(const std::string& op, const Tensor& x, Attrs attrs,
              const std::vector<std::int64_t>* axes_input = nullptr) {
  std::vector<OpInput> inputs = {{"x", x}};
  if (axes_input)
    inputs.push_back(
        {"axes", testing::i64({static_cast<std::int64_t>(axes_input->size())}, *axes_input), true});
  return run_single_op(op, inputs, std::move(attrs))[0];
}

Shape reduced_shape(const std::string& op, const Shape& in, Attrs attrs,
                    const std::vector<std::int64_t>* axes_input = nullptr) {
  std::vector<OpInput> inputs = {{"x", Tensor(DType::F32, in)}};
  if (axes_input)
    inputs.push_back(
        {"axes", testing::i64({static_cast<std::int64_t>(axes_input->size())}, *axes_input), true});
  return single_op_graph(op, inputs, std::move(attrs)).tensor("y0").shape;
}

const std::vector<std::int64_t> kAxes1 = {1};
const std::vector<std::int64_t> kAxesNone = {};

// ---------------------------------------------------------------------------------------
// Shapes.

TEST(ReductionShapes, AxesAndKeepdims) {
  EXPECT_EQ(reduced_shape("ReduceMean", {2, 3, 4}, {{"axes", std::vector<std::int64_t>{1}}}),
            (Shape{2, 1, 4}));
  EXPECT_EQ(
      reduced_shape("ReduceMean", {2, 3, 4},
                    {{"axes", std::vector<std::int64_t>{-1, 0}}, {"keepdims", std::int64_t{0}}}),
      (Shape{3}));
  // No axes: reduce everything.
  EXPECT_EQ(reduced_shape("ReduceMax", {2, 3, 4}, {}), (Shape{1, 1, 1}));
  EXPECT_EQ(reduced_shape("ReduceMax", {2, 3, 4}, {{"keepdims", std::int64_t{0}}}), Shape{});
}

TEST(ReductionShapes, ReduceSumAxesInput) {
  EXPECT_EQ(reduced_shape("ReduceSum", {2, 3, 4}, {{"keepdims", std::int64_t{0}}}, &kAxes1),
            (Shape{2, 4}));
  // Empty axes input: reduce all, unless noop_with_empty_axes.
  EXPECT_EQ(reduced_shape("ReduceSum", {2, 3, 4}, {}, &kAxesNone), (Shape{1, 1, 1}));
  EXPECT_EQ(reduced_shape("ReduceSum", {2, 3, 4}, {{"noop_with_empty_axes", std::int64_t{1}}},
                          &kAxesNone),
            (Shape{2, 3, 4}));
}

TEST(ReductionShapes, RuntimeAxesAreUnsupported) {
  // Axes computed at run time cannot give a static shape.
  EXPECT_THROW(single_op_graph("ReduceSum", {{"x", Tensor(DType::F32, {2, 3})},
                                             {"axes", i64({1}, {1}), /*constant=*/false}}),
               UnsupportedError);
}

TEST(ReductionShapes, BadAxesFail) {
  EXPECT_THROW(reduced_shape("ReduceMean", {2, 3}, {{"axes", std::vector<std::int64_t>{2}}}),
               Error);
  EXPECT_THROW(reduced_shape("ReduceMean", {2, 3}, {{"axes", std::vector<std::int64_t>{1, -1}}}),
               Error);
  try {
    reduced_shape("ReduceMean", {2, 3}, {{"axes", std::vector<std::int64_t>{-3}}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("n0"), std::string::npos) << e.what();
  }
}

TEST(ReductionShapes, DtypeRules) {
  EXPECT_NO_THROW(single_op_graph("ReduceSum", {{"x", Tensor(DType::I64, {3})}}));
  EXPECT_THROW(single_op_graph("ReduceMean", {{"x", Tensor(DType::I64, {3})}}), UnsupportedError);
  EXPECT_NO_THROW(single_op_graph("ReduceSum", {{"x", Tensor(DType::F16, {3})}}));
  EXPECT_THROW(single_op_graph("Softmax", {{"x", Tensor(DType::I64, {3})}}), UnsupportedError);
}

TEST(ReductionShapes, ArgMax) {
  auto shape = [](Attrs a) {
    return single_op_graph("ArgMax", {{"x", Tensor(DType::F32, {2, 3, 4})}}, std::move(a))
        .tensor("y0");
  };
  TensorInfo t = shape({});
  EXPECT_EQ(t.dtype, DType::I64);
  EXPECT_EQ(t.shape, (Shape{1, 3, 4}));
  EXPECT_EQ(shape({{"axis", std::int64_t{-1}}, {"keepdims", std::int64_t{0}}}).shape,
            (Shape{2, 3}));
  EXPECT_THROW(shape({{"axis", std::int64_t{3}}}), Error);
}

TEST(ReductionShapes, Softmax) {
  EXPECT_EQ(single_op_graph("Softmax", {{"x", Tensor(DType::F32, {2, 5})}}).tensor("y0").shape,
            (Shape{2, 5}));
  EXPECT_THROW(
      single_op_graph("Softmax", {{"x", Tensor(DType::F32, {2, 5})}}, {{"axis", std::int64_t{2}}}),
      Error);
  // Opset 11's flatten-at-axis semantics differs from opset 13 for a middle axis.
  EXPECT_THROW(single_op_graph("Softmax", {{"x", Tensor(DType::F32, {2, 3, 4})}}, {}, 1, 11),
               UnsupportedError);
  EXPECT_NO_THROW(single_op_graph("Softmax", {{"x", Tensor(DType::F32, {2, 3})}}, {}, 1, 11));
}

// ---------------------------------------------------------------------------------------
// Kernels.

TEST(ReductionKernels, SumMeanOverAxes) {
  // Sum over j: 0+10+20 = 30, 1+11+21 = 33, 300+30 = 330, 333.
  EXPECT_TRUE(
      tensors_close(reduce("ReduceSum", kCube, {}, &kAxes1), f32({2, 1, 2}, {30, 33, 330, 333})));
  EXPECT_TRUE(tensors_close(
      reduce("ReduceMean", kCube,
             {{"axes", std::vector<std::int64_t>{0, 2}}, {"keepdims", std::int64_t{0}}}),
      f32({3}, {50.5f, 60.5f, 70.5f})));
  // Reduce all: sum = 726, mean = 60.5.
  EXPECT_TRUE(tensors_close(reduce("ReduceSum", kCube, {{"keepdims", std::int64_t{0}}}, &kAxesNone),
                            f32({}, {726})));
  EXPECT_TRUE(tensors_close(reduce("ReduceMean", kCube, {}), f32({1, 1, 1}, {60.5f})));
  // Negative axis equals the positive one.
  EXPECT_TRUE(tensors_close(reduce("ReduceMean", kCube, {{"axes", std::vector<std::int64_t>{-1}}}),
                            reduce("ReduceMean", kCube, {{"axes", std::vector<std::int64_t>{2}}})));
  // noop_with_empty_axes returns the input unchanged.
  EXPECT_TRUE(tensors_close(
      reduce("ReduceSum", kCube, {{"noop_with_empty_axes", std::int64_t{1}}}, &kAxesNone), kCube));
}

TEST(ReductionKernels, MaxMinProd) {
  const Tensor x = f32({2, 3}, {3, -1, 2, -5, 4, 0.5f});
  const Attrs last = {{"axes", std::vector<std::int64_t>{1}}, {"keepdims", std::int64_t{0}}};
  EXPECT_TRUE(tensors_close(reduce("ReduceMax", x, last), f32({2}, {3, 4})));
  EXPECT_TRUE(tensors_close(reduce("ReduceMin", x, last), f32({2}, {-1, -5})));
  EXPECT_TRUE(tensors_close(reduce("ReduceProd", x, last), f32({2}, {-6, -10})));
  EXPECT_TRUE(tensors_close(reduce("ReduceMax", x, {{"axes", std::vector<std::int64_t>{0}}}),
                            f32({1, 3}, {3, 4, 2})));
}

TEST(ReductionKernels, Norms) {
  const Tensor x = f32({2, 2}, {3, -4, 1, 2});
  const Attrs row = {{"axes", std::vector<std::int64_t>{1}}, {"keepdims", std::int64_t{0}}};
  EXPECT_TRUE(tensors_close(reduce("ReduceL2", x, row), f32({2}, {5, std::sqrt(5.0f)})));
  EXPECT_TRUE(tensors_close(reduce("ReduceL1", x, row), f32({2}, {7, 3})));
  EXPECT_TRUE(tensors_close(reduce("ReduceSumSquare", x, row), f32({2}, {25, 5})));
  EXPECT_TRUE(
      tensors_close(reduce("ReduceLogSum", f32({2}, {1, 2}), {}), f32({1}, {std::log(3.0f)})));
  // LogSumExp of large values must not overflow: log(e^1000 + e^1000) = 1000 + log 2.
  EXPECT_TRUE(tensors_close(reduce("ReduceLogSumExp", f32({2}, {1000, 1000}), {}),
                            f32({1}, {1000 + std::log(2.0f)})));
  EXPECT_TRUE(tensors_close(
      reduce("ReduceLogSumExp", f32({3}, {0.5f, -1, 2}), {}),
      f32({1}, {static_cast<float>(std::log(std::exp(0.5) + std::exp(-1.0) + std::exp(2.0)))})));
}

TEST(ReductionKernels, IntegerReductions) {
  const Tensor x = i64({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(reduce("ReduceSum", x, {{"keepdims", std::int64_t{0}}}, &kAxes1), i64({2}, {6, 15}));
  EXPECT_EQ(reduce("ReduceMax", x, {{"axes", std::vector<std::int64_t>{0}}}),
            i64({1, 3}, {4, 5, 6}));
  EXPECT_EQ(reduce("ReduceProd", x, {{"keepdims", std::int64_t{0}}}), i64({}, {720}));
  EXPECT_EQ(reduce("ReduceMin", x, {}), i64({1, 1}, {1}));
}

TEST(ReductionKernels, ArgMaxArgMin) {
  const Tensor x = f32({2, 4}, {1, 7, 7, 0, 5, 2, 5, 9});
  auto arg = [&](const std::string& op, Attrs a) { return run_single_op(op, {{"x", x}}, a)[0]; };
  EXPECT_EQ(arg("ArgMax", {{"axis", std::int64_t{1}}}), i64({2, 1}, {1, 3}));
  EXPECT_EQ(arg("ArgMax", {{"axis", std::int64_t{-1}}, {"select_last_index", std::int64_t{1}}}),
            i64({2, 1}, {2, 3}));
  EXPECT_EQ(arg("ArgMin", {{"axis", std::int64_t{1}}, {"keepdims", std::int64_t{0}}}),
            i64({2}, {3, 1}));
  EXPECT_EQ(arg("ArgMax", {{"keepdims", std::int64_t{0}}}), i64({4}, {1, 0, 0, 1}));
  // Ties: the first index wins unless select_last_index.
  const Tensor ties = f32({3}, {2, 2, 1});
  EXPECT_EQ(run_single_op("ArgMax", {{"x", ties}})[0], i64({1}, {0}));
  EXPECT_EQ(run_single_op("ArgMax", {{"x", ties}}, {{"select_last_index", std::int64_t{1}}})[0],
            i64({1}, {1}));
  EXPECT_EQ(run_single_op("ArgMin", {{"x", i64({3}, {4, -2, -2})}},
                          {{"select_last_index", std::int64_t{1}}})[0],
            i64({1}, {2}));
}

// ---------------------------------------------------------------------------------------
// TopK.

std::vector<Tensor> topk(const Tensor& x, std::int64_t k, Attrs attrs = {}) {
  return run_single_op("TopK", {{"x", x}, {"k", i64({1}, {k}), true}}, std::move(attrs), 2);
}

TEST(ReductionTopK, LargestAlongLastAxisByDefault) {
  // ONNX test_top_k: 3x4 ramp, K = 3.
  const Tensor x = f32({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  auto y = topk(x, 3);
  EXPECT_TRUE(tensors_close(y[0], f32({3, 3}, {3, 2, 1, 7, 6, 5, 11, 10, 9})));
  EXPECT_EQ(y[1], i64({3, 3}, {3, 2, 1, 3, 2, 1, 3, 2, 1}));
  // Along axis 0 (and -2): rows ranked per column.
  auto col = topk(x, 2, {{"axis", std::int64_t{0}}});
  EXPECT_TRUE(tensors_close(col[0], f32({2, 4}, {8, 9, 10, 11, 4, 5, 6, 7})));
  EXPECT_EQ(col[1], i64({2, 4}, {2, 2, 2, 2, 1, 1, 1, 1}));
  EXPECT_EQ(topk(x, 2, {{"axis", std::int64_t{-2}}})[1], col[1]);
}

TEST(ReductionTopK, SmallestAndTiesTakeTheLowerIndexFirst) {
  const Tensor x = f32({5}, {3, 1, 3, 1, 2});
  auto big = topk(x, 3);
  EXPECT_TRUE(tensors_close(big[0], f32({3}, {3, 3, 2})));
  EXPECT_EQ(big[1], i64({3}, {0, 2, 4}));
  auto small = topk(x, 3, {{"largest", std::int64_t{0}}});
  EXPECT_TRUE(tensors_close(small[0], f32({3}, {1, 1, 2})));
  EXPECT_EQ(small[1], i64({3}, {1, 3, 4}));
  // sorted=0 leaves the order open; sorted order is one valid answer.
  EXPECT_EQ(topk(x, 2, {{"sorted", std::int64_t{0}}})[1], i64({2}, {0, 2}));
  // K = 0 is an empty selection; K = n sorts the whole axis.
  EXPECT_EQ(topk(x, 0)[1].shape(), (Shape{0}));
  EXPECT_EQ(topk(x, 5)[1], i64({5}, {0, 2, 4, 1, 3}));
}

TEST(ReductionTopK, IntegerAndDoubleInputsNaNRanksHighest) {
  auto l = topk(i64({2, 3}, {-5, 7, 7, 0, -1, 9}), 2);
  EXPECT_EQ(l[0], i64({2, 2}, {7, 7, 9, 0}));
  EXPECT_EQ(l[1], i64({2, 2}, {1, 2, 2, 0}));
  auto s = topk(Tensor::from_vector<std::int32_t>({4}, {4, -2, 8, -2}), 2,
                {{"largest", std::int64_t{0}}});
  EXPECT_EQ(s[0], Tensor::from_vector<std::int32_t>({2}, {-2, -2}));
  EXPECT_EQ(s[1], i64({2}, {1, 3}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto d = topk(Tensor::from_vector<double>({3}, {1, nan, 3}), 2);
  EXPECT_TRUE(std::isnan(d[0].values<double>()[0]));
  EXPECT_EQ(d[0].values<double>()[1], 3.0);
  EXPECT_EQ(d[1], i64({2}, {1, 2}));
  EXPECT_EQ(
      topk(Tensor::from_vector<double>({3}, {1, nan, 3}), 2, {{"largest", std::int64_t{0}}})[1],
      i64({2}, {0, 2}));
}

TEST(ReductionTopK, RefusalsNameTheNode) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  try {
    topk(x, 4);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("TopK node 'n0'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("K = 4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(topk(x, -1), Error);
  EXPECT_THROW(topk(x, 1, {{"sorted", std::int64_t{2}}}), Error);
  EXPECT_THROW(topk(x, 1, {{"axis", std::int64_t{2}}}), Error);
  // K computed at run time: no static output shape.
  EXPECT_THROW(single_op_graph("TopK", {{"x", x}, {"k", i64({1}, {1})}}, {}, 2), UnsupportedError);
  // Opsets before 10 gave K as an attribute; the IR wants the input.
  EXPECT_THROW(single_op_graph("TopK", {{"x", x}}, {{"k", std::int64_t{1}}}, 2), UnsupportedError);
  EXPECT_THROW(topk(Tensor::from_vector<std::int8_t>({2}, {1, 2}), 1), UnsupportedError);
}

// Softmax along `axis` evaluated directly from its definition.
Tensor softmax_reference(const Tensor& x, std::size_t axis, bool log) {
  const Shape& s = x.shape();
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= s[d];
  for (std::size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  const std::int64_t n = s[axis];
  std::vector<float> out(static_cast<std::size_t>(x.numel()));
  auto v = x.values<float>();
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t j = 0; j < inner; ++j) {
      double sum = 0;
      for (std::int64_t k = 0; k < n; ++k) sum += std::exp(double(v[(o * n + k) * inner + j]));
      for (std::int64_t k = 0; k < n; ++k) {
        const auto i = static_cast<std::size_t>((o * n + k) * inner + j);
        const double e = std::exp(double(v[i]));
        out[i] = static_cast<float>(log ? std::log(e / sum) : e / sum);
      }
    }
  }
  return f32(s, out);
}

TEST(ReductionKernels, SoftmaxAlongEachAxis) {
  std::vector<float> values;
  for (int i = 0; i < 24; ++i) values.push_back(std::sin(float(i)) * 3);
  const Tensor x = f32({2, 3, 4}, values);
  for (std::int64_t axis = -3; axis < 3; ++axis) {
    const auto a = static_cast<std::size_t>(axis < 0 ? axis + 3 : axis);
    EXPECT_TRUE(tensors_close(run_single_op("Softmax", {{"x", x}}, {{"axis", axis}})[0],
                              softmax_reference(x, a, false)))
        << "axis " << axis;
    EXPECT_TRUE(tensors_close(run_single_op("LogSoftmax", {{"x", x}}, {{"axis", axis}})[0],
                              softmax_reference(x, a, true)))
        << "axis " << axis;
  }
  // Default axis is the last one.
  EXPECT_TRUE(
      tensors_close(run_single_op("Softmax", {{"x", x}})[0], softmax_reference(x, 2, false)));
}

TEST(ReductionKernels, SoftmaxLargeInputsDoNotOverflow) {
  const Tensor x = f32({1, 3}, {1000, 1001, 1002});
  // Same as softmax([0, 1, 2]) since softmax is shift invariant.
  const double e0 = 1, e1 = std::exp(1.0), e2 = std::exp(2.0), s = e0 + e1 + e2;
  Tensor y = run_single_op("Softmax", {{"x", x}})[0];
  EXPECT_TRUE(tensors_close(y, f32({1, 3}, {float(e0 / s), float(e1 / s), float(e2 / s)})));
  Tensor ly = run_single_op("LogSoftmax", {{"x", x}})[0];
  EXPECT_TRUE(tensors_close(
      ly, f32({1, 3}, {float(-std::log(s)), float(1 - std::log(s)), float(2 - std::log(s))})));
  Tensor uniform = run_single_op("Softmax", {{"x", f32({4}, {1000, 1000, 1000, 1000})}})[0];
  EXPECT_TRUE(tensors_close(uniform, f32({4}, {0.25f, 0.25f, 0.25f, 0.25f})));
}

TEST(ReductionKernels, Hardmax) {
  Tensor y = run_single_op("Hardmax", {{"x", f32({2, 3}, {1, 3, 3, -1, -5, -2})}})[0];
  EXPECT_TRUE(tensors_close(y, f32({2, 3}, {0, 1, 0, 1, 0, 0})));
}

}  // namespace
}  // namespace orchid
