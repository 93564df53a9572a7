// Layout ops: shape inference (Reshape 0/-1, Slice negatives and clamping, ...), refusals,
// and kernels on several dtypes, with expected values written out by hand.
#include <gtest/gtest.h>

#include "error_message.hpp"
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

using Ints = std::vector<std::int64_t>;
using Attrs = std::map<std::string, Attribute>;

Tensor iota_f32(Shape shape) {
  Tensor t(DType::F32, shape);
  float v = 0.0f;
  for (float& x : t.values<float>()) x = v++;
  return t;
}

Tensor iota_i64(Shape shape) {
  Tensor t(DType::I64, shape);
  std::int64_t v = 0;
  for (auto& x : t.values<std::int64_t>()) x = v++;
  return t;
}

OpInput c64(const std::string& name, Ints values) {
  return {name, Tensor::from_int64s(values), true};
}

Shape shape_of(const std::string& op, const std::vector<OpInput>& inputs,
               std::map<std::string, Attribute> attrs = {}) {
  return single_op_graph(op, inputs, std::move(attrs)).tensor("y0").shape;
}

TEST(LayoutTranspose, DefaultPermReversesAndWorksOnEveryDtype) {
  auto y = run_single_op("Transpose", {{"x", iota_f32({2, 3})}});
  EXPECT_TRUE(tensors_close(y[0], f32({3, 2}, {0, 3, 1, 4, 2, 5})));
  auto z = run_single_op("Transpose", {{"x", iota_i64({2, 3, 2})}}, {{"perm", Ints{1, 2, 0}}});
  EXPECT_EQ(z[0], i64({3, 2, 2}, {0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11}));
  Tensor h(DType::F16, {2, 2});
  auto hv = h.values<std::uint16_t>();
  for (int i = 0; i < 4; ++i) hv[i] = static_cast<std::uint16_t>(0x3c00 + i);
  auto hy = run_single_op("Transpose", {{"x", h}});
  EXPECT_EQ(hy[0].values<std::uint16_t>()[1], 0x3c02);
  EXPECT_THROW(shape_of("Transpose", {{"x", iota_f32({2, 3})}}, {{"perm", Ints{0, 0}}}), Error);
}

TEST(LayoutReshape, ZeroCopiesMinusOneInfers) {
  EXPECT_EQ(shape_of("Reshape", {{"x", iota_f32({2, 3, 4})}, c64("s", {0, -1})}), (Shape{2, 12}));
  EXPECT_EQ(shape_of("Reshape", {{"x", iota_f32({2, 3, 4})}, c64("s", {-1, 0, 2})}),
            (Shape{4, 3, 2}));
  EXPECT_EQ(shape_of("Reshape", {{"x", iota_f32({0, 3})}, c64("s", {3, 0})},
                     {{"allowzero", std::int64_t{1}}}),
            (Shape{3, 0}));
  EXPECT_THROW(shape_of("Reshape", {{"x", iota_f32({2, 3})}, c64("s", {4, -1})}), Error);
  EXPECT_THROW(shape_of("Reshape", {{"x", iota_f32({2, 3})}, c64("s", {-1, -1})}), Error);
  auto y = run_single_op("Reshape", {{"x", iota_i64({2, 3})}, c64("s", {3, 2})});
  EXPECT_EQ(y[0], iota_i64({3, 2}));
}

TEST(LayoutReshape, NonConstantShapeIsUnsupported) {
  try {
    single_op_graph("Reshape", {{"x", iota_f32({2, 3})}, {"s", Tensor::from_int64s({3, 2})}});
    FAIL() << "expected UnsupportedError";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("Reshape node 'n0'"), std::string::npos) << e.what();
  }
}

TEST(LayoutFlattenSqueezeUnsqueeze, Shapes) {
  EXPECT_EQ(shape_of("Flatten", {{"x", iota_f32({2, 3, 4})}}), (Shape{2, 12}));
  EXPECT_EQ(shape_of("Flatten", {{"x", iota_f32({2, 3, 4})}}, {{"axis", std::int64_t{0}}}),
            (Shape{1, 24}));
  EXPECT_EQ(shape_of("Flatten", {{"x", iota_f32({2, 3, 4})}}, {{"axis", std::int64_t{-1}}}),
            (Shape{6, 4}));
  EXPECT_EQ(shape_of("Squeeze", {{"x", iota_f32({1, 3, 1, 2})}}), (Shape{3, 2}));
  EXPECT_EQ(shape_of("Squeeze", {{"x", iota_f32({1, 3, 1, 2})}, c64("a", {-2})}), (Shape{1, 3, 2}));
  EXPECT_THROW(shape_of("Squeeze", {{"x", iota_f32({1, 3})}, c64("a", {1})}), Error);
  EXPECT_EQ(shape_of("Unsqueeze", {{"x", iota_f32({3, 4})}, c64("a", {0, -1})}),
            (Shape{1, 3, 4, 1}));
  EXPECT_EQ(shape_of("Unsqueeze", {{"x", Tensor::from_int64s({5}).reshaped({})}, c64("a", {0})}),
            (Shape{1}));
  EXPECT_THROW(shape_of("Unsqueeze", {{"x", iota_f32({3})}, c64("a", {0, 0})}), Error);
  auto y = run_single_op("Unsqueeze", {{"x", iota_i64({3})}, c64("a", {1})});
  EXPECT_EQ(y[0], iota_i64({3, 1}));
}

TEST(LayoutConcat, AlongAxisAnyDtype) {
  auto y = run_single_op("Concat", {{"a", iota_f32({2, 1})}, {"b", f32({2, 2}, {7, 8, 9, 10})}},
                         {{"axis", std::int64_t{-1}}});
  EXPECT_TRUE(tensors_close(y[0], f32({2, 3}, {0, 7, 8, 1, 9, 10})));
  // Shape-plumbing case: int64 vectors, one of them empty.
  auto z =
      run_single_op("Concat", {{"a", i64({2}, {1, 2})}, {"b", i64({0}, {})}, {"c", i64({1}, {-1})}},
                    {{"axis", std::int64_t{0}}});
  EXPECT_EQ(z[0], i64({3}, {1, 2, -1}));
  EXPECT_THROW(shape_of("Concat", {{"a", iota_f32({2, 1})}, {"b", iota_f32({3, 1})}},
                        {{"axis", std::int64_t{1}}}),
               Error);
}

TEST(LayoutSplit, ExplicitAndEqual) {
  auto y = run_single_op("Split", {{"x", iota_f32({2, 5})}, c64("s", {2, 3})},
                         {{"axis", std::int64_t{1}}}, 2);
  EXPECT_TRUE(tensors_close(y[0], f32({2, 2}, {0, 1, 5, 6})));
  EXPECT_TRUE(tensors_close(y[1], f32({2, 3}, {2, 3, 4, 7, 8, 9})));
  auto z = run_single_op("Split", {{"x", iota_i64({6})}}, {}, 3);
  EXPECT_EQ(z[2], i64({2}, {4, 5}));
  EXPECT_THROW(single_op_graph("Split", {{"x", iota_f32({5})}}, {}, 2), Error);
  auto u = run_single_op("Split", {{"x", iota_i64({5})}}, {{"num_outputs", std::int64_t{2}}}, 2);
  EXPECT_EQ(u[0], i64({3}, {0, 1, 2}));
  EXPECT_EQ(u[1], i64({2}, {3, 4}));
}

TEST(LayoutSlice, NegativesClampingAndSteps) {
  Tensor x = iota_f32({4, 5});
  // Ends beyond the dimension clamp; negative starts count from the end.
  EXPECT_EQ(shape_of("Slice", {{"x", x}, c64("s", {-3, 1}), c64("e", {1000, -1})}), (Shape{3, 3}));
  auto y = run_single_op(
      "Slice", {{"x", x}, c64("s", {1, 0}), c64("e", {3, 5}), c64("a", {0, 1}), c64("t", {1, 2})});
  EXPECT_TRUE(tensors_close(y[0], f32({2, 3}, {5, 7, 9, 10, 12, 14})));
  // Negative step walks backwards; INT64 min/max style ends clamp.
  auto r = run_single_op(
      "Slice",
      {{"x", iota_i64({5})}, c64("s", {-1}), c64("e", {INT64_MIN}), c64("a", {0}), c64("t", {-2})});
  EXPECT_EQ(r[0], i64({3}, {4, 2, 0}));
  // Extreme steps take one element and do not overflow the count.
  auto big = run_single_op(
      "Slice",
      {{"x", iota_i64({5})}, c64("s", {1}), c64("e", {5}), c64("a", {0}), c64("t", {INT64_MAX})});
  EXPECT_EQ(big[0], i64({1}, {1}));
  auto small = run_single_op("Slice", {{"x", iota_i64({5})},
                                       c64("s", {3}),
                                       c64("e", {INT64_MIN}),
                                       c64("a", {0}),
                                       c64("t", {INT64_MIN})});
  EXPECT_EQ(small[0], i64({1}, {3}));
  auto e = run_single_op("Slice", {{"x", iota_i64({5})}, c64("s", {3}), c64("e", {1})});
  EXPECT_EQ(e[0].shape(), (Shape{0}));
  EXPECT_THROW(
      shape_of("Slice", {{"x", x}, c64("s", {0}), c64("e", {1}), c64("a", {0}), c64("t", {0})}),
      Error);
  EXPECT_THROW(single_op_graph("Slice", {{"x", x}, {"s", Tensor::from_int64s({0})}, c64("e", {1})}),
               UnsupportedError);
}

TEST(LayoutPad, ConstantReflectEdge) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto c = run_single_op("Pad", {{"x", x}, c64("p", {0, 1, 1, 0}), {"v", Tensor::scalar_f32(9)}});
  EXPECT_TRUE(tensors_close(c[0], f32({3, 4}, {9, 1, 2, 3, 9, 4, 5, 6, 9, 9, 9, 9})));
  auto r =
      run_single_op("Pad", {{"x", x}, c64("p", {0, 2, 0, 1})}, {{"mode", std::string("reflect")}});
  EXPECT_TRUE(tensors_close(r[0], f32({2, 6}, {3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5})));
  auto e =
      run_single_op("Pad", {{"x", x}, c64("p", {1, 1, 0, 0})}, {{"mode", std::string("edge")}});
  EXPECT_TRUE(tensors_close(e[0], f32({3, 4}, {1, 1, 2, 3, 1, 1, 2, 3, 4, 4, 5, 6})));
  // Negative pads crop; axes select which axes the pads apply to; int64 data.
  auto n = run_single_op(
      "Pad", {{"x", iota_i64({2, 4})}, c64("p", {-1, 1}), {"v", i64({}, {7})}, c64("a", {1})});
  EXPECT_EQ(n[0], i64({2, 4}, {1, 2, 3, 7, 5, 6, 7, 7}));
  EXPECT_THROW(shape_of("Pad", {{"x", x}, c64("p", {1, 1, 1, 1})}, {{"mode", std::string("wrap")}}),
               UnsupportedError);
  // Reflect pads must be shorter than their axis (3 columns: at most 2).
  EXPECT_THROW(
      shape_of("Pad", {{"x", x}, c64("p", {0, 3, 0, 0})}, {{"mode", std::string("reflect")}}),
      Error);
  EXPECT_THROW(
      shape_of("Pad", {{"x", x}, c64("p", {0, 0, 0, 1000000})}, {{"mode", std::string("reflect")}}),
      Error);
  // Pads whose output size overflows are an error, not a wrapped shape.
  EXPECT_THROW(shape_of("Pad", {{"x", x}, c64("p", {0, 0, INT64_MAX - 1, 0})}), Error);
}

TEST(LayoutResize, NearestModesAndShapes) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor scales = f32({4}, {1, 1, 2, 3});
  auto y = run_single_op("Resize", {{"x", x}, {"", Tensor()}, {"sc", scales, true}},
                         {{"mode", std::string("nearest")}});
  ASSERT_EQ(y[0].shape(), (Shape{1, 1, 4, 6}));
  EXPECT_TRUE(tensors_close(y[0], f32({1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                                     3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4})));
  // Downsample by sizes with asymmetric + floor: picks indices 0 and 2 of 1x4.
  auto d = run_single_op("Resize",
                         {{"x", f32({1, 1, 1, 4}, {1, 2, 3, 4})},
                          {"", Tensor()},
                          {"", Tensor()},
                          c64("sz", {1, 1, 1, 2})},
                         {{"coordinate_transformation_mode", std::string("asymmetric")},
                          {"nearest_mode", std::string("floor")}});
  EXPECT_TRUE(tensors_close(d[0], f32({1, 1, 1, 2}, {1, 3})));
  // Cubic (Keys, a = -0.75), asymmetric x2: taps weigh -0.09375, 0.59375, 0.59375,
  // -0.09375 at half positions, indices clamped to the edge; exclude_outside drops the
  // tap left of the input and renormalises (1.5 / 1.09375).
  const Tensor ramp = f32({1, 1, 1, 4}, {1, 2, 3, 4});
  const Tensor twice = f32({4}, {1, 1, 1, 2});
  const std::map<std::string, Attribute> cubic = {
      {"mode", std::string("cubic")},
      {"coordinate_transformation_mode", std::string("asymmetric")}};
  auto c = run_single_op("Resize", {{"x", ramp}, {"", Tensor()}, {"sc", twice, true}}, cubic);
  EXPECT_TRUE(tensors_close(
      c[0], f32({1, 1, 1, 8}, {1, 1.40625f, 2, 2.5f, 3, 3.59375f, 4, 4.09375f}), 1e-6, 1e-6));
  auto excluding = cubic;
  excluding["exclude_outside"] = std::int64_t{1};
  c = run_single_op("Resize", {{"x", ramp}, {"", Tensor()}, {"sc", twice, true}}, excluding);
  EXPECT_NEAR(c[0].values<float>()[1], 1.5 / 1.09375, 1e-6);
  EXPECT_THROW(shape_of("Resize", {{"x", x}, {"", Tensor()}, {"sc", scales, true}},
                        {{"mode", std::string("bicubic")}}),
               UnsupportedError);
  EXPECT_THROW(shape_of("Resize", {{"x", x}, {"", Tensor()}, {"sc", scales, true}},
                        {{"coordinate_transformation_mode", std::string("tf_crop_and_resize")}}),
               UnsupportedError);
  EXPECT_THROW(shape_of("Resize", {{"x", x}, {"", Tensor()}, {"sc", scales, true}},
                        {{"antialias", std::int64_t{1}}}),
               UnsupportedError);
}

TEST(LayoutResize, BilinearHalfPixelAndAlignCorners) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor scales = f32({4}, {1, 1, 2, 2});
  auto h = run_single_op("Resize", {{"x", x}, {"", Tensor()}, {"sc", scales, true}},
                         {{"mode", std::string("linear")}});
  // ONNX test_resize_upsample_scales_linear expected values.
  EXPECT_TRUE(
      tensors_close(h[0], f32({1, 1, 4, 4}, {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f,
                                             2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4})));
  auto a = run_single_op("Resize", {{"x", x}, {"", Tensor()}, {"sc", scales, true}},
                         {{"mode", std::string("linear")},
                          {"coordinate_transformation_mode", std::string("align_corners")}});
  const float t = 1.0f / 3.0f;
  EXPECT_TRUE(tensors_close(
      a[0],
      f32({1, 1, 4, 4}, {1, 1 + t, 1 + 2 * t, 2, 1 + 2 * t, 1 + 3 * t, 1 + 4 * t, 2 + 2 * t,
                         1 + 4 * t, 1 + 5 * t, 1 + 6 * t, 2 + 4 * t, 3, 3 + t, 3 + 2 * t, 4}),
      1e-5, 1e-5));
  // Downsample with a scale that is not out/in: ONNX test_resize_downsample_scales_linear.
  auto dn = run_single_op("Resize",
                          {{"x", f32({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})},
                           {"", Tensor()},
                           {"sc", f32({4}, {1, 1, 0.6f, 0.6f}), true}},
                          {{"mode", std::string("linear")}});
  EXPECT_TRUE(tensors_close(dn[0], f32({1, 1, 1, 2}, {2.6666667f, 4.3333335f}), 1e-5, 1e-5));
}

// half_pixel_symmetric (opset 19): 4 * 0.6 = 2.4 floored to 2 outputs; the half_pixel
// coordinates (0.33, 2.0) shift by 4 / 2 * (1 - 2 / 2.4) = 1/3, centring the samples.
TEST(LayoutResize, HalfPixelSymmetric) {
  auto y = run_single_op(
      "Resize",
      {{"x", f32({1, 4}, {1, 2, 3, 4})}, {"", Tensor()}, {"sc", f32({2}, {1, 0.6f}), true}},
      {{"mode", std::string("linear")},
       {"coordinate_transformation_mode", std::string("half_pixel_symmetric")}});
  EXPECT_TRUE(tensors_close(y[0], f32({1, 2}, {1 + 2 / 3.0f, 3 + 1 / 3.0f}), 1e-5, 1e-5));
}

// antialias=1 (opset 18), downscaling 1x4 by 0.5 (half_pixel): the triangle filter
// stretched to radius 2 covers four taps around source 0.5 and 2.5, at distances
// 1.5, 0.5, 0.5, 1.5 input pixels, i.e. weights 0.25, 0.75, 0.75, 0.25 normalised to
// 1/8, 3/8, 3/8, 1/8 (indices clamped to the edge).
TEST(LayoutResize, AntialiasedDownsampleHandComputed) {
  const Tensor x = f32({1, 1, 1, 4}, {1, 2, 3, 4});
  const OpInput half{"sc", f32({4}, {1, 1, 1, 0.5f}), true};
  Attrs linear = {{"mode", std::string("linear")}, {"antialias", std::int64_t{1}}};
  auto y = run_single_op("Resize", {{"x", x}, {"", Tensor()}, half}, linear);
  // (1 + 3 * 1 + 3 * 2 + 3) / 8 and (2 + 3 * 3 + 3 * 4 + 4) / 8.
  EXPECT_TRUE(tensors_close(y[0], f32({1, 1, 1, 2}, {1.625f, 3.375f}), 1e-6, 1e-6));
  // Without antialiasing the same points blend two taps: 1.5 and 3.5.
  auto plain = linear;
  plain["antialias"] = std::int64_t{0};
  y = run_single_op("Resize", {{"x", x}, {"", Tensor()}, half}, plain);
  EXPECT_TRUE(tensors_close(y[0], f32({1, 1, 1, 2}, {1.5f, 3.5f}), 1e-6, 1e-6));
  // exclude_outside drops the tap left (right) of the input and renormalises by 7/8.
  auto excluding = linear;
  excluding["exclude_outside"] = std::int64_t{1};
  y = run_single_op("Resize", {{"x", x}, {"", Tensor()}, half}, excluding);
  EXPECT_TRUE(tensors_close(y[0], f32({1, 1, 1, 2}, {1.5f / 0.875f, 2.875f / 0.875f}), 1e-6, 1e-6));
  // Cubic (a = -0.75) stretched to radius 4: eight taps at distances 3.5 .. 0.5 on each
  // side, Keys weights W(1.75), W(1.25), W(0.75), W(0.25) = -0.03515625, -0.10546875,
  // 0.26171875, 0.87890625 (mirrored), summing to 2. Source 0.5 reads 1,1,1,1,2,3,4,4.
  Attrs cubic = {{"mode", std::string("cubic")}, {"antialias", std::int64_t{1}}};
  y = run_single_op("Resize", {{"x", x}, {"", Tensor()}, half}, cubic);
  const double w[] = {-0.03515625, -0.10546875, 0.26171875, 0.87890625};
  const double first =
      ((w[0] + w[1] + w[2] + w[3]) * 1 + w[3] * 2 + w[2] * 3 + (w[1] + w[0]) * 4) / 2;
  EXPECT_DOUBLE_EQ(first, 1.490234375);
  // The ramp is symmetric: the second output mirrors the first (5 - 1.490234375).
  EXPECT_TRUE(tensors_close(y[0], f32({1, 1, 1, 2}, {1.490234375f, 3.509765625f}), 1e-6, 1e-6));
  // Upscaling is not antialiased: the same as plain linear.
  const OpInput twice{"sc2", f32({4}, {1, 1, 1, 2}), true};
  EXPECT_TRUE(tensors_close(run_single_op("Resize", {{"x", x}, {"", Tensor()}, twice}, linear)[0],
                            run_single_op("Resize", {{"x", x}, {"", Tensor()}, twice}, plain)[0],
                            1e-6, 1e-6));
  // Nearest has no antialiased form.
  EXPECT_THROW(shape_of("Resize", {{"x", x}, {"", Tensor()}, half},
                        {{"mode", std::string("nearest")}, {"antialias", std::int64_t{1}}}),
               UnsupportedError);
}

// keep_aspect_ratio_policy (opset 18): one scale for every axis in `axes`, the smallest
// (not_larger) or largest (not_smaller) sizes[i] / in[axes[i]], output length that scale
// times the input rounded half up.
TEST(LayoutResize, KeepAspectRatioPolicyShapes) {
  const Tensor x = iota_f32({1, 3, 20, 30});
  auto policy = [](const std::string& p) {
    return Attrs{{"keep_aspect_ratio_policy", p}, {"axes", Ints{2, 3}}};
  };
  const std::vector<OpInput> inputs = {
      {"x", x}, {"", Tensor()}, {"", Tensor()}, c64("sz", {10, 10})};
  EXPECT_EQ(shape_of("Resize", inputs, policy("stretch")), (Shape{1, 3, 10, 10}));
  EXPECT_EQ(shape_of("Resize", inputs, policy("not_larger")), (Shape{1, 3, 7, 10}));  // 6.67
  EXPECT_EQ(shape_of("Resize", inputs, policy("not_smaller")), (Shape{1, 3, 10, 15}));
  // Axes in the other order, and negative: the same scale.
  Attrs reversed = {{"keep_aspect_ratio_policy", std::string("not_larger")}, {"axes", Ints{-1, 2}}};
  EXPECT_EQ(shape_of("Resize", inputs, reversed), (Shape{1, 3, 7, 10}));
  // 5 * 0.5 = 2.5 rounds up to 3 rows, sampled at scale 0.5 (not 3 / 5): the first two
  // rows are those of scales 0.5, the third continues them.
  const Tensor small = iota_f32({1, 1, 5, 8});
  Attrs nearest = policy("not_larger");
  auto y = run_single_op(
      "Resize", {{"x", small}, {"", Tensor()}, {"", Tensor()}, c64("sz", {4, 4})}, nearest);
  ASSERT_EQ(y[0].shape(), (Shape{1, 1, 3, 4}));
  auto by_scale = run_single_op(
      "Resize", {{"x", small}, {"", Tensor()}, {"sc", f32({4}, {1, 1, 0.5f, 0.5f}), true}});
  ASSERT_EQ(by_scale[0].shape(), (Shape{1, 1, 2, 4}));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(y[0].values<float>()[i], by_scale[0].values<float>()[i]);
  // Row 2 samples source row (2 + 0.5) / 0.5 - 0.5 = 4.5, rounded down to 4.
  EXPECT_EQ(y[0].values<float>()[8], 32.0f);
  // With scales the policy does not apply.
  EXPECT_EQ(shape_of("Resize", {{"x", x}, {"", Tensor()}, {"sc", f32({2}, {0.5f, 0.5f}), true}},
                     policy("not_smaller")),
            (Shape{1, 3, 10, 15}));
}

TEST(LayoutResize, BadKeepAspectRatioPolicyNamesTheNode) {
  const std::string message = testing::error_of([] {
    shape_of(
        "Resize",
        {{"x", iota_f32({1, 1, 4, 4})}, {"", Tensor()}, {"", Tensor()}, c64("sz", {1, 1, 2, 2})},
        {{"keep_aspect_ratio_policy", std::string("fit")}});
  });
  EXPECT_NE(message.find("n0"), std::string::npos) << message;
  EXPECT_NE(message.find("keep_aspect_ratio_policy 'fit'"), std::string::npos) << message;
  // An empty axis has no aspect ratio to keep.
  EXPECT_NE(testing::error_of([] {
              shape_of("Resize",
                       {{"x", iota_f32({1, 1, 0, 4})},
                        {"", Tensor()},
                        {"", Tensor()},
                        c64("sz", {1, 1, 2, 2})},
                       {{"keep_aspect_ratio_policy", std::string("not_larger")}});
            }).find("empty axis 2"),
            std::string::npos);
}

TEST(LayoutGather, AxisNegativeIndicesAndDtypes) {
  auto y = run_single_op("Gather", {{"x", iota_f32({3, 2})}, {"i", i64({2}, {-1, 0})}});
  EXPECT_TRUE(tensors_close(y[0], f32({2, 2}, {4, 5, 0, 1})));
  auto z = run_single_op(
      "Gather",
      {{"x", iota_i64({2, 3})}, {"i", Tensor::from_vector<std::int32_t>({2, 2}, {2, 0, 1, 1})}},
      {{"axis", std::int64_t{1}}});
  EXPECT_EQ(z[0], i64({2, 2, 2}, {2, 0, 1, 1, 5, 3, 4, 4}));
  // Scalar index drops the axis (shape plumbing: Shape -> Gather(0)).
  auto s = run_single_op("Gather", {{"x", i64({4}, {1, 3, 224, 224})}, {"i", i64({}, {1}), true}});
  EXPECT_EQ(s[0], i64({}, {3}));
  EXPECT_THROW(shape_of("Gather", {{"x", iota_f32({3})}, {"i", i64({1}, {3}), true}}), Error);
}

TEST(LayoutGatherND, OnnxExamplesAndSlices) {
  // The examples of the ONNX spec.
  auto a = run_single_op("GatherND", {{"x", iota_i64({2, 2})}, {"i", i64({2, 2}, {0, 0, 1, 1})}});
  EXPECT_EQ(a[0], i64({2}, {0, 3}));
  auto b = run_single_op("GatherND", {{"x", iota_f32({2, 2})}, {"i", i64({2, 1}, {1, 0})}});
  EXPECT_TRUE(tensors_close(b[0], f32({2, 2}, {2, 3, 0, 1})));
  auto c =
      run_single_op("GatherND", {{"x", iota_f32({2, 2, 2})}, {"i", i64({2, 2}, {0, 1, 1, 0})}});
  EXPECT_TRUE(tensors_close(c[0], f32({2, 2}, {2, 3, 4, 5})));
  auto d =
      run_single_op("GatherND", {{"x", iota_f32({2, 2, 2})}, {"i", i64({2, 1, 2}, {0, 1, 1, 0})}});
  EXPECT_TRUE(tensors_close(d[0], f32({2, 1, 2}, {2, 3, 4, 5})));
  // Negative indices count from the end: (-1, -2) is (1, 0).
  auto n = run_single_op("GatherND", {{"x", iota_i64({2, 2})}, {"i", i64({1, 2}, {-1, -2})}});
  EXPECT_EQ(n[0], i64({1}, {2}));
}

TEST(LayoutGatherND, BatchDims) {
  // Batch 0 takes row 1 of data[0], batch 1 row 0 of data[1].
  auto y = run_single_op("GatherND", {{"x", iota_f32({2, 2, 2})}, {"i", i64({2, 1}, {1, 0})}},
                         {{"batch_dims", std::int64_t{1}}});
  EXPECT_TRUE(tensors_close(y[0], f32({2, 2}, {2, 3, 4, 5})));
  // Two index tuples per batch, each addressing one element: shape [2, 2].
  auto z = run_single_op(
      "GatherND", {{"x", iota_i64({2, 2, 3})}, {"i", i64({2, 2, 2}, {0, 2, 1, 0, 1, 1, 0, 0})}},
      {{"batch_dims", std::int64_t{1}}});
  EXPECT_EQ(z[0], i64({2, 2}, {2, 3, 10, 6}));
}

TEST(LayoutGatherND, ShapeErrorsAndOutOfRangeIndices) {
  const Tensor x = iota_f32({2, 3});
  EXPECT_EQ(shape_of("GatherND", {{"x", iota_f32({2, 3, 4})}, {"i", i64({5, 1}, {0, 1, 0, 1, 0})}}),
            (Shape{5, 3, 4}));
  EXPECT_THROW(shape_of("GatherND", {{"x", x}, {"i", i64({1, 3}, {0, 0, 0})}}), Error);
  EXPECT_THROW(shape_of("GatherND", {{"x", x}, {"i", i64({3, 1}, {0, 1, 0})}},
                        {{"batch_dims", std::int64_t{1}}}),
               Error);  // batch dim 3 vs 2
  EXPECT_THROW(
      shape_of("GatherND", {{"x", x}, {"i", Tensor::from_vector<std::int32_t>({1, 1}, {0})}}),
      UnsupportedError);
  // Constant indices are checked at import, run-time ones by the kernel.
  try {
    shape_of("GatherND", {{"x", x}, {"i", i64({1, 2}, {0, 3}), true}});
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GatherND node 'n0'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run_single_op("GatherND", {{"x", x}, {"i", i64({1, 2}, {-3, 0})}}), Error);
}

TEST(LayoutScatterElements, OnnxExamplesAndNegativeIndices) {
  Tensor zeros(DType::F32, {3, 3});
  auto y =
      run_single_op("ScatterElements", {{"d", zeros},
                                        {"i", i64({2, 3}, {1, 0, 2, 0, 2, 1})},
                                        {"u", f32({2, 3}, {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f})}});
  EXPECT_TRUE(tensors_close(y[0], f32({3, 3}, {2.0f, 1.1f, 0, 1.0f, 0, 2.2f, 0, 2.1f, 1.2f})));
  const Tensor row = f32({1, 5}, {1, 2, 3, 4, 5});
  const Attrs axis1{{"axis", std::int64_t{1}}};
  auto z = run_single_op("ScatterElements",
                         {{"d", row}, {"i", i64({1, 2}, {1, 3})}, {"u", f32({1, 2}, {1.1f, 2.1f})}},
                         axis1);
  EXPECT_TRUE(tensors_close(z[0], f32({1, 5}, {1, 1.1f, 3, 2.1f, 5})));
  auto n = run_single_op(
      "ScatterElements",
      {{"d", row}, {"i", i64({1, 2}, {1, -3})}, {"u", f32({1, 2}, {1.1f, 2.1f})}}, axis1);
  EXPECT_TRUE(tensors_close(n[0], f32({1, 5}, {1, 1.1f, 2.1f, 4, 5})));
  // int32 indices, int64 data.
  auto w = run_single_op("ScatterElements", {{"d", iota_i64({4})},
                                             {"i", Tensor::from_vector<std::int32_t>({2}, {3, 0})},
                                             {"u", i64({2}, {-7, -8})}});
  EXPECT_EQ(w[0], i64({4}, {-8, 1, 2, -7}));
}

TEST(LayoutScatterElements, AddAndMulCombineDuplicates) {
  const Tensor row = f32({1, 5}, {1, 2, 3, 4, 5});
  auto scatter = [&](const std::string& reduction) {
    return run_single_op("ScatterElements",
                         {{"d", row}, {"i", i64({1, 2}, {1, 1})}, {"u", f32({1, 2}, {1.1f, 2.1f})}},
                         {{"axis", std::int64_t{1}}, {"reduction", reduction}})[0];
  };
  // ONNX test_scatter_elements_with_duplicate_indices: 2 + 1.1 + 2.1.
  EXPECT_TRUE(tensors_close(scatter("add"), f32({1, 5}, {1, 5.2f, 3, 4, 5})));
  EXPECT_TRUE(tensors_close(scatter("mul"), f32({1, 5}, {1, 2 * 1.1f * 2.1f, 3, 4, 5})));
  auto ints = run_single_op(
      "ScatterElements",
      {{"d", iota_i64({2, 2})}, {"i", i64({2, 1}, {1, 1})}, {"u", i64({2, 1}, {10, 20})}},
      {{"axis", std::int64_t{1}}, {"reduction", std::string("add")}});
  EXPECT_EQ(ints[0], i64({2, 2}, {0, 11, 2, 23}));
}

TEST(LayoutScatterElements, Refusals) {
  const Tensor d = iota_f32({2, 3});
  const Tensor i = i64({1, 2}, {0, 1});
  const Tensor u = f32({1, 2}, {9, 9});
  auto graph = [&](std::map<std::string, Attribute> attrs, std::int64_t opset = 17) {
    return single_op_graph("ScatterElements", {{"d", d}, {"i", i}, {"u", u}}, std::move(attrs), 1,
                           opset);
  };
  // max/min are opset 18; before 16 there is no reduction at all.
  EXPECT_THROW(graph({{"reduction", std::string("max")}}), UnsupportedError);
  EXPECT_THROW(graph({{"reduction", std::string("add")}}, 15), UnsupportedError);
  EXPECT_NO_THROW(graph({}, 11));
  EXPECT_THROW(single_op_graph("ScatterElements", {{"d", d}, {"i", i}, {"u", f32({2, 1}, {9, 9})}}),
               Error);
  EXPECT_THROW(single_op_graph("ScatterElements", {{"d", d}, {"i", i}, {"u", i64({1, 2}, {9, 9})}}),
               Error);
  EXPECT_THROW(
      single_op_graph("ScatterElements", {{"d", d}, {"i", i64({1, 2}, {0, 2}), true}, {"u", u}}),
      Error);
  try {
    run_single_op("ScatterElements", {{"d", d}, {"i", i64({1, 2}, {0, 2})}, {"u", u}});
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ScatterElements node 'n0'"), std::string::npos)
        << e.what();
  }
}

TEST(LayoutExpandTile, Broadcasts) {
  auto y = run_single_op("Expand", {{"x", f32({3, 1}, {1, 2, 3})}, c64("s", {2, 1, 2})});
  EXPECT_TRUE(tensors_close(y[0], f32({2, 3, 2}, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3})));
  EXPECT_EQ(shape_of("Expand", {{"x", iota_f32({3, 1})}, c64("s", {1})}), (Shape{3, 1}));
  EXPECT_THROW(shape_of("Expand", {{"x", iota_f32({3, 2})}, c64("s", {4})}), Error);
  auto t = run_single_op("Tile", {{"x", iota_i64({2, 2})}, c64("r", {1, 2})});
  EXPECT_EQ(t[0], i64({2, 4}, {0, 1, 0, 1, 2, 3, 2, 3}));
  auto t2 = run_single_op("Tile", {{"x", f32({2}, {1, 2})}, c64("r", {3})});
  EXPECT_TRUE(tensors_close(t2[0], f32({6}, {1, 2, 1, 2, 1, 2})));
}

TEST(LayoutDepthSpace, RoundTripAndDcrOrder) {
  Tensor x = iota_f32({1, 4, 2, 3});
  auto d = run_single_op("DepthToSpace", {{"x", x}}, {{"blocksize", std::int64_t{2}}});
  ASSERT_EQ(d[0].shape(), (Shape{1, 1, 4, 6}));
  // DCR: out[h*2+b1][w*2+b2] = in[(b1*2+b2)][h][w].
  EXPECT_EQ(d[0].values<float>()[0 * 6 + 1], 6.0f);   // b1=0 b2=1 h=0 w=0 -> channel 1
  EXPECT_EQ(d[0].values<float>()[1 * 6 + 0], 12.0f);  // b1=1 b2=0 -> channel 2
  auto s = run_single_op("SpaceToDepth", {{"x", d[0]}}, {{"blocksize", std::int64_t{2}}});
  EXPECT_EQ(s[0], x);
  auto crd = run_single_op("DepthToSpace", {{"x", x}},
                           {{"blocksize", std::int64_t{2}}, {"mode", std::string("CRD")}});
  EXPECT_EQ(crd[0].values<float>()[1], 6.0f);  // one output channel: CRD == DCR here
}

}  // namespace
}  // namespace orchid
