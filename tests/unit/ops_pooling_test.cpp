// MaxPool, AveragePool and the global pools: output sizes (ceil_mode, auto_pad, dilations),
// refusals, and hand-computed or brute-force expected values.
#include <gtest/gtest.h>

#include <limits>

#include "op_test_util.hpp"
#include "util/error.hpp"

namespace orchid {
namespace {

using testing::f32;
using testing::OpInput;
using testing::run_single_op;
using testing::single_op_graph;
using testing::tensors_close;

using Ints = std::vector<std::int64_t>;

Tensor iota(Shape shape) {
  Tensor t(DType::F32, shape);
  float v = 1.0f;
  for (float& x : t.values<float>()) x = v++;
  return t;
}

Shape pool_shape(const std::string& op, Shape x, std::map<std::string, Attribute> attrs) {
  Graph g = single_op_graph(op, {{"x", Tensor(DType::F32, std::move(x))}}, std::move(attrs));
  return g.tensor("y0").shape;
}

TEST(PoolingShape, StridesPadsCeilAutoPadDilations) {
  EXPECT_EQ(
      pool_shape(
          "MaxPool", {1, 64, 112, 112},
          {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}),
      (Shape{1, 64, 56, 56}));
  EXPECT_EQ(
      pool_shape(
          "MaxPool", {1, 1, 4, 4},
          {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", std::int64_t{1}}}),
      (Shape{1, 1, 2, 2}));
  EXPECT_EQ(
      pool_shape("MaxPool", {1, 1, 4, 4}, {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}}),
      (Shape{1, 1, 1, 1}));
  EXPECT_EQ(pool_shape("AveragePool", {1, 3, 7, 8},
                       {{"kernel_shape", Ints{2, 3}},
                        {"strides", Ints{2, 2}},
                        {"auto_pad", std::string("SAME_UPPER")}}),
            (Shape{1, 3, 4, 4}));
  EXPECT_EQ(pool_shape("MaxPool", {1, 1, 4, 4},
                       {{"kernel_shape", Ints{2, 2}}, {"dilations", Ints{2, 2}}}),
            (Shape{1, 1, 2, 2}));
  EXPECT_EQ(pool_shape("MaxPool", {2, 3, 10}, {{"kernel_shape", Ints{3}}}), (Shape{2, 3, 8}));
  EXPECT_EQ(pool_shape("GlobalAveragePool", {2, 5, 7, 7}, {}), (Shape{2, 5, 1, 1}));
  EXPECT_EQ(pool_shape("GlobalMaxPool", {2, 5, 9}, {}), (Shape{2, 5, 1}));
}

TEST(PoolingShape, ErrorsAndRefusals) {
  EXPECT_THROW(pool_shape("MaxPool", {1, 1, 4, 4}, {}), Error);  // kernel_shape missing
  EXPECT_THROW(pool_shape("MaxPool", {1, 1, 4, 4}, {{"kernel_shape", Ints{3}}}), Error);
  EXPECT_THROW(pool_shape("MaxPool", {1, 1, 2, 2}, {{"kernel_shape", Ints{3, 3}}}), Error);
  // Indices output is not implemented.
  EXPECT_THROW(single_op_graph("MaxPool", {{"x", Tensor(DType::F32, {1, 1, 4, 4})}},
                               {{"kernel_shape", Ints{2, 2}}}, 2),
               UnsupportedError);
  EXPECT_THROW(single_op_graph("AveragePool", {{"x", Tensor(DType::U8, {1, 1, 4, 4})}},
                               {{"kernel_shape", Ints{2, 2}}}),
               UnsupportedError);
}

TEST(PoolingMaxPool, HandComputed) {
  // 4x4 input 1..16, kernel 2, stride 2: maxima of each 2x2 block.
  auto y = run_single_op("MaxPool", {{"x", iota({1, 1, 4, 4})}},
                         {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  EXPECT_TRUE(tensors_close(y[0], f32({1, 1, 2, 2}, {6, 8, 14, 16})));
}

TEST(PoolingMaxPool, PadsIgnoreOutsideAndCeilMode) {
  Tensor x = f32({1, 1, 3, 3}, {-1, -2, -3, -4, -5, -6, -7, -8, -9});
  // Padding must not contribute zeros to the max of negative values.
  auto y = run_single_op(
      "MaxPool", {{"x", x}},
      {{"kernel_shape", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}});
  EXPECT_TRUE(tensors_close(y[0], f32({1, 1, 2, 2}, {-1, -2, -4, -5})));
  auto z = run_single_op(
      "MaxPool", {{"x", iota({1, 1, 4, 4})}},
      {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", std::int64_t{1}}});
  EXPECT_TRUE(tensors_close(z[0], f32({1, 1, 2, 2}, {11, 12, 15, 16})));
}

TEST(PoolingMaxPool, Dilations) {
  auto y = run_single_op("MaxPool", {{"x", iota({1, 1, 4, 4})}},
                         {{"kernel_shape", Ints{2, 2}}, {"dilations", Ints{2, 2}}});
  EXPECT_TRUE(tensors_close(y[0], f32({1, 1, 2, 2}, {11, 12, 15, 16})));
}

TEST(PoolingMaxPool, OneAndThreeDimensional) {
  auto y = run_single_op("MaxPool", {{"x", f32({1, 1, 5}, {3, 1, 4, 1, 5})}},
                         {{"kernel_shape", Ints{2}}});
  EXPECT_TRUE(tensors_close(y[0], f32({1, 1, 4}, {3, 4, 4, 5})));
  auto z =
      run_single_op("MaxPool", {{"x", iota({1, 2, 2, 2, 2})}}, {{"kernel_shape", Ints{2, 2, 2}}});
  EXPECT_TRUE(tensors_close(z[0], f32({1, 2, 1, 1, 1}, {8, 16})));
}

TEST(PoolingAveragePool, CountIncludePad) {
  // 2x2 input of ones plus pad 1, kernel 2, stride 1 -> 3x3 output.
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  std::map<std::string, Attribute> attrs{{"kernel_shape", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}};
  auto excl = run_single_op("AveragePool", {{"x", x}}, attrs);
  EXPECT_TRUE(tensors_close(excl[0], f32({1, 1, 3, 3}, {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4})));
  attrs["count_include_pad"] = std::int64_t{1};
  auto incl = run_single_op("AveragePool", {{"x", x}}, attrs);
  EXPECT_TRUE(tensors_close(
      incl[0], f32({1, 1, 3, 3}, {0.25f, 0.75f, 0.5f, 1, 2.5f, 1.5f, 0.75f, 1.75f, 1})));
}

TEST(PoolingAveragePool, SameUpperAndCeilModeDivideByValidTaps) {
  // SAME_UPPER on width 3, kernel 2: pad one at the end, which is not counted.
  auto y = run_single_op("AveragePool", {{"x", f32({1, 1, 1, 3}, {2, 4, 8})}},
                         {{"kernel_shape", Ints{1, 2}}, {"auto_pad", std::string("SAME_UPPER")}});
  EXPECT_TRUE(tensors_close(y[0], f32({1, 1, 1, 3}, {3, 6, 8})));
  auto z = run_single_op(
      "AveragePool", {{"x", iota({1, 1, 4, 4})}},
      {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", std::int64_t{1}}});
  // Windows: rows/cols {0..2} and {2..3}.
  EXPECT_TRUE(tensors_close(z[0], f32({1, 1, 2, 2}, {6, 7.5f, 12, 13.5f})));
}

TEST(PoolingAveragePool, BruteForceWithStridesAndPads) {
  Tensor x(DType::F32, {2, 3, 7, 6});
  int seq = 0;
  for (float& e : x.values<float>()) e = static_cast<float>((seq++ * 37) % 23) * 0.25f - 2.0f;
  const Ints k{3, 2}, s{2, 3}, pads{1, 0, 2, 1};
  for (std::int64_t include : {0, 1}) {
    auto y = run_single_op(
        "AveragePool", {{"x", x}},
        {{"kernel_shape", k}, {"strides", s}, {"pads", pads}, {"count_include_pad", include}});
    const Shape& ys = y[0].shape();
    ASSERT_EQ(ys, (Shape{2, 3, 4, 2}));  // (7+1+2-3)/2+1, (6+0+1-2)/3+1
    for (std::int64_t p = 0; p < 6; ++p) {
      for (std::int64_t oh = 0; oh < ys[2]; ++oh) {
        for (std::int64_t ow = 0; ow < ys[3]; ++ow) {
          double sum = 0;
          int count = 0;
          for (std::int64_t i = 0; i < k[0]; ++i) {
            for (std::int64_t j = 0; j < k[1]; ++j) {
              const std::int64_t h = oh * s[0] - pads[0] + i, w = ow * s[1] - pads[1] + j;
              const bool in_x = h >= 0 && h < 7 && w >= 0 && w < 6;
              if (in_x) sum += x.values<float>()[(p * 7 + h) * 6 + w];
              if (in_x || include) ++count;
            }
          }
          EXPECT_NEAR(y[0].values<float>()[(p * ys[2] + oh) * ys[3] + ow], sum / count, 1e-5);
        }
      }
    }
  }
}

TEST(PoolingGlobal, AverageAndMax) {
  Tensor x = f32({1, 2, 2, 2}, {1, 2, 3, 4, -5, -6, -7, -8});
  EXPECT_TRUE(tensors_close(run_single_op("GlobalAveragePool", {{"x", x}})[0],
                            f32({1, 2, 1, 1}, {2.5f, -6.5f})));
  EXPECT_TRUE(
      tensors_close(run_single_op("GlobalMaxPool", {{"x", x}})[0], f32({1, 2, 1, 1}, {4, -5})));
}

}  // namespace
}  // namespace orchid
