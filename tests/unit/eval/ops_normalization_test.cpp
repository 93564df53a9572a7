// Normalization family: BatchNormalization (inference), InstanceNormalization,
// LayerNormalization (opset 17, with optional Mean/InvStdDev outputs), LpNormalization.
// Expected values come from the defining formulas evaluated in double in the test.
// Tolerance: rtol 1e-5, atol 1e-5 (f32 outputs of values of order 1).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "op_test_util.hpp"
#include "util/error.hpp"

namespace orchid {
namespace {

using testing::f32;
using testing::run_single_op;
using testing::single_op_graph;
using testing::tensors_close;

constexpr double kRtol = 1e-5;
constexpr double kAtol = 1e-5;

std::vector<float> ramp(int n, float scale) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i)
    v.push_back(std::cos(static_cast<float>(i) * 0.7f) * scale + 0.1f * i);
  return v;
}

// ---------------------------------------------------------------------------------------
// BatchNormalization.

TEST(NormalizationShapes, BatchNorm) {
  auto graph = [](Shape x, Shape p, std::map<std::string, Attribute> attrs = {},
                  std::size_t outputs = 1) {
    return single_op_graph("BatchNormalization",
                           {{"x", Tensor(DType::F32, x)},
                            {"s", Tensor(DType::F32, p)},
                            {"b", Tensor(DType::F32, p)},
                            {"m", Tensor(DType::F32, p)},
                            {"v", Tensor(DType::F32, p)}},
                           std::move(attrs), outputs);
  };
  EXPECT_EQ(graph({2, 3, 4, 5}, {3}).tensor("y0").shape, (Shape{2, 3, 4, 5}));
  EXPECT_THROW(graph({2, 3, 4, 5}, {4}), Error);
  EXPECT_THROW(graph({3}, {3}), Error);
  EXPECT_THROW(graph({2, 3, 4}, {3}, {{"training_mode", std::int64_t{1}}}), UnsupportedError);
  EXPECT_THROW(graph({2, 3, 4}, {3}, {}, 3), UnsupportedError);
}

TEST(NormalizationKernels, BatchNorm) {
  const std::vector<float> xs = ramp(2 * 3 * 4, 2.0f);
  const Tensor x = f32({2, 3, 2, 2}, xs);
  const std::vector<float> scale = {0.5f, 2.0f, -1.0f}, bias = {0.1f, -0.2f, 0.3f},
                           mean = {0.2f, -0.4f, 1.0f}, var = {1.5f, 0.25f, 4.0f};
  const float eps = 1e-3f;
  std::vector<float> expected;
  for (int i = 0; i < 24; ++i) {
    const int c = (i / 4) % 3;
    expected.push_back(static_cast<float>(
        (xs[i] - double(mean[c])) / std::sqrt(double(var[c]) + double(eps)) * scale[c] + bias[c]));
  }
  Tensor y = run_single_op("BatchNormalization",
                           {{"x", x},
                            {"s", f32({3}, scale), true},
                            {"b", f32({3}, bias), true},
                            {"m", f32({3}, mean), true},
                            {"v", f32({3}, var), true}},
                           {{"epsilon", eps}})[0];
  EXPECT_TRUE(tensors_close(y, f32({2, 3, 2, 2}, expected), kRtol, kAtol));
  // Hand value: x = 1, mean 0, var 3, eps 1 -> 1/2; scale 4, bias 1 -> 3. Rank 2 (N x C).
  Tensor y2 = run_single_op("BatchNormalization",
                            {{"x", f32({1, 1}, {1})},
                             {"s", f32({1}, {4})},
                             {"b", f32({1}, {1})},
                             {"m", f32({1}, {0})},
                             {"v", f32({1}, {3})}},
                            {{"epsilon", 1.0f}})[0];
  EXPECT_TRUE(tensors_close(y2, f32({1, 1}, {3})));
}

// ---------------------------------------------------------------------------------------
// InstanceNormalization.

TEST(NormalizationShapes, InstanceNorm) {
  EXPECT_THROW(single_op_graph("InstanceNormalization", {{"x", Tensor(DType::F32, {1, 2, 3})},
                                                         {"s", Tensor(DType::F32, {3})},
                                                         {"b", Tensor(DType::F32, {2})}}),
               Error);
  EXPECT_NO_THROW(single_op_graph("InstanceNormalization", {{"x", Tensor(DType::F16, {1, 2, 3})},
                                                            {"s", Tensor(DType::F16, {2})},
                                                            {"b", Tensor(DType::F16, {2})}}));
}

TEST(NormalizationKernels, InstanceNorm) {
  // Hand example: one channel [1, 2, 3, 4]: mean 2.5, var 1.25.
  Tensor y = run_single_op(
      "InstanceNormalization",
      {{"x", f32({1, 1, 4}, {1, 2, 3, 4})}, {"s", f32({1}, {2})}, {"b", f32({1}, {1})}},
      {{"epsilon", 0.0f}})[0];
  const double sd = std::sqrt(1.25);
  std::vector<float> expected;
  for (double v : {1.0, 2.0, 3.0, 4.0}) expected.push_back(float((v - 2.5) / sd * 2 + 1));
  EXPECT_TRUE(tensors_close(y, f32({1, 1, 4}, expected), kRtol, kAtol));

  // Two images, two channels, 2x3 spatial; statistics per (n, c).
  const std::vector<float> xs = ramp(24, 3.0f);
  const std::vector<float> scale = {1.5f, -0.5f}, bias = {0.0f, 2.0f};
  std::vector<float> exp2(24);
  for (int nc = 0; nc < 4; ++nc) {
    double m = 0, v = 0;
    for (int i = 0; i < 6; ++i) m += xs[nc * 6 + i];
    m /= 6;
    for (int i = 0; i < 6; ++i) v += (xs[nc * 6 + i] - m) * (xs[nc * 6 + i] - m);
    v /= 6;
    for (int i = 0; i < 6; ++i) {
      exp2[nc * 6 + i] =
          float((xs[nc * 6 + i] - m) / std::sqrt(v + 1e-5) * scale[nc % 2] + bias[nc % 2]);
    }
  }
  Tensor y2 = run_single_op(
      "InstanceNormalization",
      {{"x", f32({2, 2, 2, 3}, xs)}, {"s", f32({2}, scale)}, {"b", f32({2}, bias)}})[0];
  EXPECT_TRUE(tensors_close(y2, f32({2, 2, 2, 3}, exp2), kRtol, kAtol));
}

// ---------------------------------------------------------------------------------------
// LayerNormalization.

TEST(NormalizationShapes, LayerNorm) {
  Graph g =
      single_op_graph("LayerNormalization",
                      {{"x", Tensor(DType::F32, {2, 3, 4})}, {"s", Tensor(DType::F32, {3, 4})}},
                      {{"axis", std::int64_t{-2}}}, 3);
  EXPECT_EQ(g.tensor("y0").shape, (Shape{2, 3, 4}));
  EXPECT_EQ(g.tensor("y1").shape, (Shape{2, 1, 1}));
  EXPECT_EQ(g.tensor("y2").dtype, DType::F32);
  // Scale must fit the normalized shape X.shape[axis:].
  EXPECT_THROW(single_op_graph("LayerNormalization", {{"x", Tensor(DType::F32, {2, 3, 4})},
                                                      {"s", Tensor(DType::F32, {3})}}),
               Error);
  EXPECT_THROW(single_op_graph("LayerNormalization",
                               {{"x", Tensor(DType::F32, {2, 4})}, {"s", Tensor(DType::F32, {4})}},
                               {{"axis", std::int64_t{2}}}),
               Error);
  EXPECT_THROW(single_op_graph("LayerNormalization",
                               {{"x", Tensor(DType::F32, {2, 4})}, {"s", Tensor(DType::F32, {4})}},
                               {{"stash_type", std::int64_t{16}}}),
               UnsupportedError);
}

TEST(NormalizationKernels, LayerNormLastAxisWithStatistics) {
  // Rows [1, 2, 3, 4] and [-2, 0, 2, 4]: means 2.5 / 1, variances 1.25 / 5.
  const Tensor x = f32({2, 4}, {1, 2, 3, 4, -2, 0, 2, 4});
  const std::vector<float> scale = {1, 2, 0.5f, -1}, bias = {0, 0.5f, -0.5f, 1};
  std::vector<Tensor> out = run_single_op(
      "LayerNormalization", {{"x", x}, {"s", f32({4}, scale)}, {"b", f32({4}, bias)}}, {}, 3);
  const double eps = 1e-5;
  const double means[] = {2.5, 1.0}, vars[] = {1.25, 5.0};
  std::vector<float> expected;
  for (int r = 0; r < 2; ++r) {
    for (int j = 0; j < 4; ++j) {
      const double xv = x.values<float>()[r * 4 + j];
      expected.push_back(float((xv - means[r]) / std::sqrt(vars[r] + eps) * scale[j] + bias[j]));
    }
  }
  EXPECT_TRUE(tensors_close(out[0], f32({2, 4}, expected), kRtol, kAtol));
  EXPECT_TRUE(tensors_close(out[1], f32({2, 1}, {2.5f, 1.0f})));
  EXPECT_TRUE(tensors_close(
      out[2], f32({2, 1}, {float(1 / std::sqrt(1.25 + eps)), float(1 / std::sqrt(5.0 + eps))})));
}

TEST(NormalizationKernels, LayerNormEarlierAxisNoBias) {
  // axis=1 on [2,2,3]: each batch item normalised over its 6 values.
  const std::vector<float> xs = ramp(12, 1.0f);
  std::vector<float> scale = {1, 2, 3, 4, 5, 6};
  std::vector<float> expected(12);
  for (int n = 0; n < 2; ++n) {
    double m = 0, v = 0;
    for (int i = 0; i < 6; ++i) m += xs[n * 6 + i];
    m /= 6;
    for (int i = 0; i < 6; ++i) v += (xs[n * 6 + i] - m) * (xs[n * 6 + i] - m);
    v /= 6;
    for (int i = 0; i < 6; ++i) {
      expected[n * 6 + i] = float((xs[n * 6 + i] - m) / std::sqrt(v + 1e-3) * scale[i]);
    }
  }
  Tensor y =
      run_single_op("LayerNormalization", {{"x", f32({2, 2, 3}, xs)}, {"s", f32({2, 3}, scale)}},
                    {{"axis", std::int64_t{1}}, {"epsilon", 1e-3f}})[0];
  EXPECT_TRUE(tensors_close(y, f32({2, 2, 3}, expected), kRtol, kAtol));
  // Scale broadcast from [3] over the normalized [2,3] block.
  Tensor yb =
      run_single_op("LayerNormalization", {{"x", f32({2, 2, 3}, xs)}, {"s", f32({3}, {1, 1, 1})}},
                    {{"axis", std::int64_t{-2}}, {"epsilon", 1e-3f}})[0];
  Tensor y1 = run_single_op("LayerNormalization",
                            {{"x", f32({2, 2, 3}, xs)}, {"s", f32({2, 3}, {1, 1, 1, 1, 1, 1})}},
                            {{"axis", std::int64_t{1}}, {"epsilon", 1e-3f}})[0];
  EXPECT_TRUE(tensors_close(yb, y1));
}

// ---------------------------------------------------------------------------------------
// LpNormalization.

TEST(NormalizationKernels, LpNorm) {
  const Tensor x = f32({2, 2}, {3, 4, -6, 8});
  EXPECT_TRUE(tensors_close(run_single_op("LpNormalization", {{"x", x}})[0],
                            f32({2, 2}, {0.6f, 0.8f, -0.6f, 0.8f})));
  EXPECT_TRUE(tensors_close(run_single_op("LpNormalization", {{"x", x}},
                                          {{"axis", std::int64_t{0}}, {"p", std::int64_t{1}}})[0],
                            f32({2, 2}, {1.0f / 3, 4.0f / 12, -6.0f / 9, 8.0f / 12})));
  EXPECT_THROW(single_op_graph("LpNormalization", {{"x", Tensor(DType::F32, {2})}},
                               {{"p", std::int64_t{3}}}),
               UnsupportedError);
}

}  // namespace
}  // namespace orchid
