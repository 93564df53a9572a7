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

// ---------------------------------------------------------------------------------------
// RoiAlign. On X = 4y + x bilinear interpolation is exact, so a bin's average is 4 * mean(y)
// + mean(x) over its samples (after the border clamps).

Tensor ramp_plane() {
  Tensor t(DType::F32, {1, 1, 4, 4});
  float v = 0.0f;
  for (float& x : t.values<float>()) x = v++;
  return t;
}

Tensor roi_align(const Tensor& x, const Tensor& rois, std::vector<std::int64_t> batch,
                 std::map<std::string, Attribute> attrs, std::int64_t opset = 17) {
  const auto n = static_cast<std::int64_t>(batch.size());
  return run_single_op("RoiAlign",
                       {{"x", x}, {"rois", rois}, {"b", testing::i64({n}, batch), true}},
                       std::move(attrs), 1, opset)[0];
}

using Attrs = std::map<std::string, Attribute>;
const Attribute kOutputHalfPixel = std::string("output_half_pixel");

TEST(PoolingRoiAlign, OutputHalfPixelClampsSamplesPastTheLastPixel) {
  // Bins of 2x2 pixels, samples at 0.5 and 1.5 (or 2.5 and 3.5 -> 3) per axis.
  const Tensor y = roi_align(ramp_plane(), f32({1, 4}, {0, 0, 4, 4}), {0},
                             {{"coordinate_transformation_mode", kOutputHalfPixel},
                              {"output_height", std::int64_t{2}},
                              {"output_width", std::int64_t{2}},
                              {"sampling_ratio", std::int64_t{2}}});
  EXPECT_TRUE(tensors_close(y, f32({1, 1, 2, 2}, {5, 6.75f, 12, 13.75f})));
}

TEST(PoolingRoiAlign, HalfPixelShiftsTheRegionByHalfAPixel) {
  // The same region shifted by -0.5: samples at 0, 1 and 2, 3 per axis.
  const Tensor y = roi_align(ramp_plane(), f32({1, 4}, {0, 0, 4, 4}), {0},
                             {{"output_height", std::int64_t{2}},
                              {"output_width", std::int64_t{2}},
                              {"sampling_ratio", std::int64_t{2}}});
  EXPECT_TRUE(tensors_close(y, f32({1, 1, 2, 2}, {2.5f, 4.5f, 10.5f, 12.5f})));
}

TEST(PoolingRoiAlign, AdaptiveSamplingAndMalformedRegions) {
  const Attrs legacy{{"coordinate_transformation_mode", kOutputHalfPixel}};
  // sampling_ratio 0: ceil(4 / 1) = 4 samples per axis at 0.5, 1.5, 2.5, 3.5 -> 3.
  EXPECT_TRUE(tensors_close(roi_align(ramp_plane(), f32({1, 4}, {0, 0, 4, 4}), {0}, legacy),
                            f32({1, 1, 1, 1}, {9.375f})));
  Attrs one = legacy;
  one["sampling_ratio"] = std::int64_t{1};  // one sample at the centre, (2, 2)
  EXPECT_TRUE(tensors_close(roi_align(ramp_plane(), f32({1, 4}, {0, 0, 4, 4}), {0}, one),
                            f32({1, 1, 1, 1}, {10})));
  // An inverted region: output_half_pixel forces it to 1x1 (sample at (2.5, 2.5)),
  // half_pixel samples nothing.
  EXPECT_TRUE(tensors_close(roi_align(ramp_plane(), f32({1, 4}, {2, 2, 1, 1}), {0}, legacy),
                            f32({1, 1, 1, 1}, {12.5f})));
  EXPECT_TRUE(tensors_close(roi_align(ramp_plane(), f32({1, 4}, {2, 2, 1, 1}), {0}, {}),
                            f32({1, 1, 1, 1}, {0})));
}

TEST(PoolingRoiAlign, SamplesOutsideTheImage) {
  Attrs a{{"coordinate_transformation_mode", kOutputHalfPixel},
          {"sampling_ratio", std::int64_t{1}}};
  // Sample at x = -0.8, y = 0.5: within one pixel of the border, clamped to x = 0.
  // At x = -2 it is too far out and contributes 0; likewise past the far border.
  const Tensor y =
      roi_align(ramp_plane(), f32({3, 4}, {-1.3f, 0, -0.3f, 1, -2.5f, 0, -1.5f, 1, 10, 10, 12, 12}),
                {0, 0, 0}, a);
  EXPECT_TRUE(tensors_close(y, f32({3, 1, 1, 1}, {2, 0, 0})));
}

TEST(PoolingRoiAlign, MaxTakesTheLargestWeightedTerm) {
  // One sample at (0.5, 0.5) of [[1, 2], [3, 4]]: weights 0.25 each, so max mode gives
  // 0.25 * 4 = 1 (ONNX / ONNX Runtime semantics), avg the interpolated 2.5.
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  Attrs a{{"coordinate_transformation_mode", kOutputHalfPixel},
          {"sampling_ratio", std::int64_t{1}},
          {"mode", std::string("max")}};
  EXPECT_TRUE(
      tensors_close(roi_align(x, f32({1, 4}, {0, 0, 1, 1}), {0}, a), f32({1, 1, 1, 1}, {1})));
  // Four samples at 0.25 / 0.75: the best is 0.5625 * 4 at (0.75, 0.75).
  a["sampling_ratio"] = std::int64_t{2};
  EXPECT_TRUE(
      tensors_close(roi_align(x, f32({1, 4}, {0, 0, 1, 1}), {0}, a), f32({1, 1, 1, 1}, {2.25f})));
  a["mode"] = std::string("avg");
  EXPECT_TRUE(
      tensors_close(roi_align(x, f32({1, 4}, {0, 0, 1, 1}), {0}, a), f32({1, 1, 1, 1}, {2.5f})));
}

TEST(PoolingRoiAlign, BatchIndicesChannelsAndSpatialScale) {
  // X[n][c] = ramp + 100n + 50c; rois in a twice larger image (spatial_scale 0.5).
  Tensor x(DType::F32, {2, 2, 4, 4});
  auto v = x.values<float>();
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    v[i] = static_cast<float>(i % 16 + 100 * (i / 32) + 50 * ((i / 16) % 2));
  }
  const Tensor y = roi_align(x, f32({2, 4}, {0, 0, 8, 8, 0, 0, 8, 8}), {1, 0},
                             {{"coordinate_transformation_mode", kOutputHalfPixel},
                              {"output_height", std::int64_t{2}},
                              {"output_width", std::int64_t{2}},
                              {"sampling_ratio", std::int64_t{2}},
                              {"spatial_scale", 0.5f}});
  std::vector<float> expected;
  for (float base : {100.0f, 150.0f, 0.0f, 50.0f}) {
    for (float bin : {5.0f, 6.75f, 12.0f, 13.75f}) expected.push_back(base + bin);
  }
  EXPECT_TRUE(tensors_close(y, f32({2, 2, 2, 2}, expected)));
}

TEST(PoolingRoiAlign, ShapesAndRefusals) {
  const Tensor x(DType::F32, {2, 3, 8, 8});
  const Tensor rois(DType::F32, {5, 4});
  auto graph = [&](Attrs attrs, std::vector<std::int64_t> batch = {0, 1, 0, 1, 1},
                   std::int64_t opset = 17) {
    return single_op_graph(
        "RoiAlign",
        {{"x", x},
         {"rois", rois},
         {"b", testing::i64({static_cast<std::int64_t>(batch.size())}, batch), true}},
        std::move(attrs), 1, opset);
  };
  EXPECT_EQ(graph({{"output_height", std::int64_t{7}}, {"output_width", std::int64_t{5}}})
                .tensor("y0")
                .shape,
            (Shape{5, 3, 7, 5}));
  EXPECT_THROW(graph({{"mode", std::string("sum")}}), UnsupportedError);
  EXPECT_THROW(graph({{"coordinate_transformation_mode", std::string("align_corners")}}),
               UnsupportedError);
  EXPECT_THROW(graph({{"output_height", std::int64_t{0}}}), Error);
  EXPECT_THROW(graph({{"sampling_ratio", std::int64_t{-1}}}), Error);
  EXPECT_THROW(graph({}, {0, 1}), Error);  // 2 batch indices for 5 rois
  // RoiAlign-10 had no coordinate_transformation_mode and used output_half_pixel: the
  // kernel cannot tell, so the implicit form is refused and the explicit one accepted.
  EXPECT_THROW(graph({}, {0, 1, 0, 1, 1}, 15), UnsupportedError);
  EXPECT_NO_THROW(
      graph({{"coordinate_transformation_mode", kOutputHalfPixel}}, {0, 1, 0, 1, 1}, 15));
  try {
    graph({}, {0, 1, 2, 1, 1});
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("RoiAlign node 'n0'"), std::string::npos) << e.what();
  }
  // Run-time batch indices are checked by the kernel.
  EXPECT_THROW(run_single_op("RoiAlign", {{"x", ramp_plane()},
                                          {"rois", f32({1, 4}, {0, 0, 1, 1})},
                                          {"b", testing::i64({1}, {1})}}),
               Error);
}

}  // namespace
}  // namespace orchid
