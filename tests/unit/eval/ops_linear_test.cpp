// Conv, ConvTranspose, Gemm and MatMul: shape inference, refusals, and kernels checked
// against independent naive formulas computed inside the tests.
#include <gtest/gtest.h>

#include "op_test_util.hpp"
#include "util/error.hpp"

namespace orchid {
namespace {

using testing::f32;
using testing::OpInput;
using testing::run_single_op;
using testing::single_op_graph;
using testing::tensors_close;

// Deterministic pseudo-random values in [-1, 1).
Tensor random_f32(Shape shape, std::uint32_t seed) {
  Tensor t(DType::F32, shape);
  std::uint32_t s = seed * 2654435761u + 1;
  for (float& v : t.values<float>()) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(s >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
  return t;
}

Shape out_shape(const std::string& op, const std::vector<OpInput>& inputs,
                std::map<std::string, Attribute> attrs) {
  Graph g = single_op_graph(op, inputs, std::move(attrs));
  return g.tensor("y0").shape;
}

OpInput in(const std::string& name, Shape shape, std::uint32_t seed = 1) {
  return {name, random_f32(std::move(shape), seed)};
}

// ---- Conv: independent gather-form reference over N-D coordinates ----------------

struct ConvParams {
  std::vector<std::int64_t> strides, dilations, pads;
  std::int64_t group = 1;
};

std::vector<std::int64_t> unravel(std::int64_t flat, const Shape& shape) {
  std::vector<std::int64_t> idx(shape.size());
  for (std::size_t i = shape.size(); i-- > 0;) {
    idx[i] = flat % shape[i];
    flat /= shape[i];
  }
  return idx;
}

std::int64_t ravel(const std::vector<std::int64_t>& idx, const Shape& shape) {
  std::int64_t flat = 0;
  for (std::size_t i = 0; i < shape.size(); ++i) flat = flat * shape[i] + idx[i];
  return flat;
}

Tensor naive_conv(const Tensor& x, const Tensor& w, const Tensor* b, const ConvParams& p,
                  const Shape& y_shape) {
  Tensor y(DType::F32, y_shape);
  const std::size_t sp = x.rank() - 2;
  const std::int64_t cg = w.shape()[1];
  const std::int64_t mg = w.shape()[0] / p.group;
  Shape kshape(w.shape().begin() + 2, w.shape().end());
  for (std::int64_t o = 0; o < y.numel(); ++o) {
    auto yi = unravel(o, y_shape);
    const std::int64_t m = yi[1];
    double acc = b ? b->values<float>()[static_cast<std::size_t>(m)] : 0.0;
    for (std::int64_t c = 0; c < cg; ++c) {
      for (std::int64_t kf = 0; kf < shape_numel(kshape); ++kf) {
        auto ki = unravel(kf, kshape);
        std::vector<std::int64_t> xi{yi[0], (m / mg) * cg + c};
        bool inside = true;
        for (std::size_t a = 0; a < sp; ++a) {
          const std::int64_t pos = yi[2 + a] * p.strides[a] + ki[a] * p.dilations[a] - p.pads[a];
          inside = inside && pos >= 0 && pos < x.shape()[2 + a];
          xi.push_back(pos);
        }
        if (!inside) continue;
        std::vector<std::int64_t> wi{m, c};
        wi.insert(wi.end(), ki.begin(), ki.end());
        acc += static_cast<double>(x.values<float>()[ravel(xi, x.shape())]) *
               w.values<float>()[ravel(wi, w.shape())];
      }
    }
    y.values<float>()[static_cast<std::size_t>(o)] = static_cast<float>(acc);
  }
  return y;
}

TEST(LinearConvShape, StridesPadsDilationsGroups) {
  EXPECT_EQ(out_shape("Conv", {in("x", {1, 3, 224, 224}), in("w", {64, 3, 7, 7})},
                      {{"strides", std::vector<std::int64_t>{2, 2}},
                       {"pads", std::vector<std::int64_t>{3, 3, 3, 3}}}),
            (Shape{1, 64, 112, 112}));
  EXPECT_EQ(out_shape("Conv", {in("x", {2, 8, 10, 12}), in("w", {4, 4, 3, 3})},
                      {{"group", std::int64_t{2}},
                       {"dilations", std::vector<std::int64_t>{2, 3}},
                       {"pads", std::vector<std::int64_t>{1, 0, 2, 0}}}),
            (Shape{2, 4, 9, 6}));  // (10+3-5)/1+1, (12-7)+1
  EXPECT_EQ(out_shape("Conv", {in("x", {1, 4, 17}), in("w", {8, 1, 3})},
                      {{"group", std::int64_t{4}}, {"strides", std::vector<std::int64_t>{2}}}),
            (Shape{1, 8, 8}));
}

TEST(LinearConvShape, AutoPad) {
  auto shape_for = [](const std::string& mode) {
    return out_shape("Conv", {in("x", {1, 1, 5, 6}), in("w", {1, 1, 3, 3})},
                     {{"auto_pad", mode}, {"strides", std::vector<std::int64_t>{2, 2}}});
  };
  EXPECT_EQ(shape_for("SAME_UPPER"), (Shape{1, 1, 3, 3}));
  EXPECT_EQ(shape_for("SAME_LOWER"), (Shape{1, 1, 3, 3}));
  EXPECT_EQ(shape_for("VALID"), (Shape{1, 1, 2, 2}));
  EXPECT_THROW(shape_for("BOGUS"), UnsupportedError);
}

TEST(LinearConvShape, ChannelMismatchNamesNode) {
  try {
    single_op_graph("Conv", {in("x", {1, 3, 8, 8}), in("w", {4, 2, 3, 3})});
    FAIL() << "expected an error";
  } catch (const UnsupportedError&) {
    FAIL() << "channel mismatch is malformed, not unsupported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Conv node 'n0'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(
      single_op_graph("Conv", {in("x", {1, 4, 8, 8}), in("w", {4, 4, 3, 3}), in("b", {3})}), Error);
  EXPECT_THROW(single_op_graph("Conv", {in("x", {1, 4, 8, 8}), in("w", {4, 4, 3, 3})},
                               {{"kernel_shape", std::vector<std::int64_t>{5, 5}}}),
               Error);
  EXPECT_THROW(single_op_graph("Conv", {in("x", {1, 4, 2, 2}), in("w", {4, 4, 3, 3})}), Error);
}

// Attributes straight from a file must not overflow the window arithmetic (signed
// overflow is undefined; a wrapped size would make a tiny output of a huge window).
TEST(LinearConvShape, HugeAttributesAreErrorsNotOverflows) {
  constexpr std::int64_t kHuge = std::int64_t{1} << 62;
  const auto x = in("x", {1, 4, 8, 8});
  const auto w = in("w", {4, 4, 3, 3});
  EXPECT_THROW(
      single_op_graph("Conv", {x, w}, {{"dilations", std::vector<std::int64_t>{kHuge, 1}}}), Error);
  EXPECT_THROW(
      single_op_graph("Conv", {x, w}, {{"pads", std::vector<std::int64_t>{kHuge, 0, kHuge, 0}}}),
      Error);
  EXPECT_THROW(
      single_op_graph("ConvTranspose", {x, w}, {{"strides", std::vector<std::int64_t>{kHuge, 1}}}),
      Error);
  EXPECT_THROW(single_op_graph("ConvTranspose", {x, w},
                               {{"pads", std::vector<std::int64_t>{-kHuge, 0, -kHuge, 0}}}),
               Error);
  EXPECT_THROW(single_op_graph("DepthToSpace", {in("x", {1, 4, 2, 2})},
                               {{"blocksize", std::int64_t{1} << 32}}),
               Error);
  EXPECT_THROW(single_op_graph("SpaceToDepth", {in("x", {1, 4, 0, 0})},
                               {{"blocksize", std::int64_t{1} << 40}}),
               Error);
}

TEST(LinearConvShape, RefusesNonFloat) {
  std::vector<OpInput> inputs{{"x", Tensor(DType::F64, {1, 1, 4, 4})},
                              {"w", Tensor(DType::F64, {1, 1, 3, 3})}};
  EXPECT_THROW(single_op_graph("Conv", inputs), UnsupportedError);
}

void expect_conv_matches(const Shape& xs, const Shape& ws, const ConvParams& p, bool bias) {
  Tensor x = random_f32(xs, 3), w = random_f32(ws, 4), b = random_f32({ws[0]}, 5);
  std::vector<OpInput> inputs{{"x", x}, {"w", w, true}};
  if (bias) inputs.push_back({"b", b, true});
  std::vector<std::int64_t> pads = p.pads;
  for (std::size_t i = 0; i < p.pads.size(); ++i) pads.push_back(p.pads[i] + 1);  // asymmetric
  auto y = run_single_op(
      "Conv", inputs,
      {{"strides", p.strides}, {"dilations", p.dilations}, {"pads", pads}, {"group", p.group}});
  EXPECT_TRUE(
      tensors_close(y[0], naive_conv(x, w, bias ? &b : nullptr, p, y[0].shape()), 1e-4, 1e-5));
}

TEST(LinearConvKernel, TwoDimensionalGroupsStridesDilations) {
  expect_conv_matches({2, 4, 9, 11}, {6, 2, 3, 2}, {{2, 1}, {1, 2}, {1, 0}, 2}, true);
  expect_conv_matches({1, 3, 8, 8}, {5, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}, false);
}

TEST(LinearConvKernel, Depthwise) {
  expect_conv_matches({1, 6, 7, 7}, {6, 1, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, 6}, true);
}

TEST(LinearConvKernel, OneAndThreeDimensional) {
  expect_conv_matches({2, 3, 20}, {4, 3, 5}, {{3}, {2}, {2}, 1}, true);
  expect_conv_matches({1, 2, 5, 6, 7}, {3, 2, 2, 3, 2}, {{1, 2, 2}, {2, 1, 1}, {0, 1, 1}, 1}, true);
}

TEST(LinearConvKernel, HandComputed) {
  // 3x3 input, 2x2 all-ones kernel: each output is the sum of a 2x2 block.
  auto y = run_single_op("Conv", {{"x", f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})},
                                  {"w", f32({1, 1, 2, 2}, {1, 1, 1, 1}), true},
                                  {"b", f32({1}, {0.5f}), true}});
  EXPECT_TRUE(tensors_close(y[0], f32({1, 1, 2, 2}, {12.5f, 16.5f, 24.5f, 28.5f})));
}

TEST(LinearConvKernel, SameLowerPadsAtTheStart) {
  // 1x4 input, kernel 1x2 of ones, SAME_LOWER: pad one zero at the left.
  auto y = run_single_op(
      "Conv", {{"x", f32({1, 1, 1, 4}, {1, 2, 3, 4})}, {"w", f32({1, 1, 1, 2}, {1, 1}), true}},
      {{"auto_pad", std::string("SAME_LOWER")}});
  EXPECT_TRUE(tensors_close(y[0], f32({1, 1, 1, 4}, {1, 3, 5, 7})));
  auto z = run_single_op(
      "Conv", {{"x", f32({1, 1, 1, 4}, {1, 2, 3, 4})}, {"w", f32({1, 1, 1, 2}, {1, 1}), true}},
      {{"auto_pad", std::string("SAME_UPPER")}});
  EXPECT_TRUE(tensors_close(z[0], f32({1, 1, 1, 4}, {3, 5, 7, 4})));
}

// ---- ConvTranspose: scatter definition ---------------------------------------------

Tensor naive_conv_transpose(const Tensor& x, const Tensor& w, const Tensor* b,
                            const std::vector<std::int64_t>& strides,
                            const std::vector<std::int64_t>& dilations,
                            const std::vector<std::int64_t>& pad_begin, std::int64_t group,
                            const Shape& y_shape) {
  Tensor y(DType::F32, y_shape);
  const std::size_t sp = x.rank() - 2;
  const std::int64_t cg = x.shape()[1] / group;
  const std::int64_t mg = w.shape()[1];
  auto yv = y.values<float>();
  for (std::int64_t o = 0; o < y.numel(); ++o) {
    yv[o] = b ? b->values<float>()[unravel(o, y_shape)[1]] : 0.0f;
  }
  for (std::int64_t xf = 0; xf < x.numel(); ++xf) {
    auto xi = unravel(xf, x.shape());
    const std::int64_t c = xi[1];
    for (std::int64_t wf = 0; wf < w.numel(); ++wf) {
      auto wi = unravel(wf, w.shape());
      if (wi[0] != c) continue;
      std::vector<std::int64_t> yi{xi[0], (c / cg) * mg + wi[1]};
      bool inside = true;
      for (std::size_t a = 0; a < sp; ++a) {
        const std::int64_t pos = xi[2 + a] * strides[a] + wi[2 + a] * dilations[a] - pad_begin[a];
        inside = inside && pos >= 0 && pos < y_shape[2 + a];
        yi.push_back(pos);
      }
      if (inside) yv[ravel(yi, y_shape)] += x.values<float>()[xf] * w.values<float>()[wf];
    }
  }
  return y;
}

TEST(LinearConvTransposeShape, PadsOutputPaddingOutputShape) {
  EXPECT_EQ(out_shape("ConvTranspose", {in("x", {1, 1, 3, 3}), in("w", {1, 2, 3, 3})},
                      {{"strides", std::vector<std::int64_t>{3, 2}},
                       {"pads", std::vector<std::int64_t>{1, 2, 1, 2}}}),
            (Shape{1, 2, 7, 3}));
  EXPECT_EQ(out_shape("ConvTranspose", {in("x", {1, 1, 3, 3}), in("w", {1, 2, 3, 3})},
                      {{"strides", std::vector<std::int64_t>{3, 2}},
                       {"output_padding", std::vector<std::int64_t>{1, 1}}}),
            (Shape{1, 2, 10, 8}));
  EXPECT_EQ(out_shape("ConvTranspose", {in("x", {1, 1, 3, 3}), in("w", {1, 2, 3, 3})},
                      {{"strides", std::vector<std::int64_t>{3, 2}},
                       {"output_shape", std::vector<std::int64_t>{10, 8}}}),
            (Shape{1, 2, 10, 8}));
  EXPECT_EQ(out_shape("ConvTranspose", {in("x", {1, 4, 3, 3}), in("w", {4, 3, 3, 3})},
                      {{"strides", std::vector<std::int64_t>{2, 2}},
                       {"group", std::int64_t{2}},
                       {"auto_pad", std::string("SAME_UPPER")}}),
            (Shape{1, 6, 6, 6}));
  EXPECT_THROW(single_op_graph("ConvTranspose", {in("x", {1, 3, 3, 3}), in("w", {2, 2, 3, 3})}),
               Error);
}

TEST(LinearConvTransposeKernel, MatchesScatterDefinition) {
  Tensor x = random_f32({2, 4, 4, 5}, 7), w = random_f32({4, 3, 3, 2}, 8), b = random_f32({6}, 9);
  auto y = run_single_op("ConvTranspose", {{"x", x}, {"w", w, true}, {"b", b, true}},
                         {{"strides", std::vector<std::int64_t>{2, 3}},
                          {"dilations", std::vector<std::int64_t>{1, 2}},
                          {"pads", std::vector<std::int64_t>{1, 0, 0, 2}},
                          {"output_padding", std::vector<std::int64_t>{1, 0}},
                          {"group", std::int64_t{2}}});
  ASSERT_EQ(y[0].shape(), (Shape{2, 6, 9, 13}));  // 2*3+1+3-1, 3*4+3-2
  EXPECT_TRUE(tensors_close(
      y[0], naive_conv_transpose(x, w, &b, {2, 3}, {1, 2}, {1, 0}, 2, y[0].shape()), 1e-4, 1e-5));
}

TEST(LinearConvTransposeKernel, OneDimensional) {
  Tensor x = random_f32({1, 2, 6}, 10), w = random_f32({2, 3, 4}, 11);
  auto y = run_single_op("ConvTranspose", {{"x", x}, {"w", w, true}},
                         {{"strides", std::vector<std::int64_t>{2}}});
  EXPECT_TRUE(tensors_close(
      y[0], naive_conv_transpose(x, w, nullptr, {2}, {1}, {0}, 1, y[0].shape()), 1e-4, 1e-5));
}

TEST(LinearConvTransposeKernel, OnnxAutoPadSameUpperExample) {
  // ONNX's test_convtranspose_autopad_same: X = 0..8, W = ones, first output row.
  std::vector<float> xs(9);
  for (int i = 0; i < 9; ++i) xs[i] = static_cast<float>(i);
  auto y = run_single_op(
      "ConvTranspose",
      {{"x", f32({1, 1, 3, 3}, xs)}, {"w", f32({1, 2, 3, 3}, std::vector<float>(18, 1.0f)), true}},
      {{"auto_pad", std::string("SAME_UPPER")}, {"strides", std::vector<std::int64_t>{2, 2}}});
  ASSERT_EQ(y[0].shape(), (Shape{1, 2, 6, 6}));
  const std::vector<float> row0{0, 0, 1, 1, 3, 2};
  for (int j = 0; j < 6; ++j) EXPECT_EQ(y[0].values<float>()[j], row0[j]);
}

TEST(LinearConvTransposeKernel, OutputShapeLargerThanFullAddsZeros) {
  std::vector<float> xs(9);
  for (int i = 0; i < 9; ++i) xs[i] = static_cast<float>(i);
  auto y = run_single_op(
      "ConvTranspose",
      {{"x", f32({1, 1, 3, 3}, xs)}, {"w", f32({1, 2, 3, 3}, std::vector<float>(18, 1.0f)), true}},
      {{"strides", std::vector<std::int64_t>{3, 2}},
       {"output_shape", std::vector<std::int64_t>{10, 8}}});
  ASSERT_EQ(y[0].shape(), (Shape{1, 2, 10, 8}));
  const std::vector<float> row0{0, 0, 1, 1, 3, 2, 2, 0};
  for (int j = 0; j < 8; ++j) EXPECT_EQ(y[0].values<float>()[j], row0[j]);
}

// ---- Gemm and MatMul --------------------------------------------------------------

TEST(LinearGemm, TransposesAlphaBetaAndBroadcastC) {
  const std::int64_t m = 5, k = 7, n = 4;
  Tensor a = random_f32({k, m}, 12), b = random_f32({n, k}, 13);
  for (Shape cs : {Shape{m, n}, Shape{n}, Shape{m, 1}, Shape{1, n}, Shape{}}) {
    Tensor c = random_f32(cs, 14);
    auto y = run_single_op("Gemm", {{"a", a}, {"b", b, true}, {"c", c, true}},
                           {{"transA", std::int64_t{1}},
                            {"transB", std::int64_t{1}},
                            {"alpha", 0.5f},
                            {"beta", 2.0f}});
    Tensor expect(DType::F32, {m, n});
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          acc += static_cast<double>(a.values<float>()[p * m + i]) * b.values<float>()[j * k + p];
        }
        const std::int64_t ci = cs.size() == 2 ? (cs[0] == 1 ? 0 : i) * cs[1] + (cs[1] == 1 ? 0 : j)
                                               : (cs.size() == 1 ? j : 0);
        expect.values<float>()[i * n + j] =
            static_cast<float>(0.5 * acc + 2.0 * c.values<float>()[ci]);
      }
    }
    EXPECT_TRUE(tensors_close(y[0], expect, 1e-5, 1e-5)) << shape_to_string(cs);
  }
}

TEST(LinearGemm, WithoutCAndShapeErrors) {
  auto y = run_single_op("Gemm", {{"a", f32({1, 2}, {1, 2})}, {"b", f32({2, 2}, {1, 2, 3, 4})}});
  EXPECT_TRUE(tensors_close(y[0], f32({1, 2}, {7, 10})));
  EXPECT_THROW(single_op_graph("Gemm", {in("a", {2, 3}), in("b", {4, 2})}), Error);
  EXPECT_THROW(single_op_graph("Gemm", {in("a", {2, 3}), in("b", {3, 4}), in("c", {3, 4})}), Error);
}

Tensor naive_matmul(const Tensor& a, const Tensor& b, const Shape& y_shape) {
  // Works on the promoted (rank >= 2) forms, broadcasting batch dims by index clamping.
  Shape as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const std::size_t rank = std::max(as.size(), bs.size());
  while (as.size() < rank) as.insert(as.begin(), 1);
  while (bs.size() < rank) bs.insert(bs.begin(), 1);
  Shape full(rank);
  for (std::size_t i = 0; i + 2 < rank; ++i) full[i] = std::max(as[i], bs[i]);
  full[rank - 2] = as[rank - 2];
  full[rank - 1] = bs[rank - 1];
  Tensor y(DType::F32, full);
  const std::int64_t k = as.back();
  for (std::int64_t o = 0; o < y.numel(); ++o) {
    auto yi = unravel(o, full);
    double acc = 0;
    for (std::int64_t p = 0; p < k; ++p) {
      auto ai = yi, bi = yi;
      for (std::size_t d = 0; d + 2 < rank; ++d) {
        if (as[d] == 1) ai[d] = 0;
        if (bs[d] == 1) bi[d] = 0;
      }
      ai[rank - 1] = p;
      bi[rank - 2] = p;
      acc +=
          static_cast<double>(a.values<float>()[ravel(ai, as)]) * b.values<float>()[ravel(bi, bs)];
    }
    y.values<float>()[o] = static_cast<float>(acc);
  }
  return y.reshaped(y_shape);
}

TEST(LinearMatMul, ShapesWithPromotionAndBroadcast) {
  EXPECT_EQ(out_shape("MatMul", {in("a", {3}), in("b", {3})}, {}), Shape{});
  EXPECT_EQ(out_shape("MatMul", {in("a", {3}), in("b", {2, 3, 4})}, {}), (Shape{2, 4}));
  EXPECT_EQ(out_shape("MatMul", {in("a", {2, 5, 3}), in("b", {3})}, {}), (Shape{2, 5}));
  EXPECT_EQ(out_shape("MatMul", {in("a", {2, 1, 5, 3}), in("b", {4, 3, 6})}, {}),
            (Shape{2, 4, 5, 6}));
  EXPECT_THROW(single_op_graph("MatMul", {in("a", {2, 3}), in("b", {4, 2})}), Error);
  EXPECT_THROW(single_op_graph("MatMul", {in("a", {2, 2, 3}), in("b", {3, 3, 2})}), Error);
}

TEST(LinearMatMul, KernelMatchesNaive) {
  const std::vector<std::pair<Shape, Shape>> cases{{{3}, {3}},          {{4}, {2, 4, 3}},
                                                   {{2, 5, 4}, {4}},    {{2, 1, 5, 3}, {4, 3, 6}},
                                                   {{1, 7, 9}, {9, 2}}, {{6, 5}, {5, 3}}};
  std::uint32_t seed = 20;
  for (const auto& [as, bs] : cases) {
    Tensor a = random_f32(as, seed++), b = random_f32(bs, seed++);
    auto y = run_single_op("MatMul", {{"a", a}, {"b", b}});
    EXPECT_TRUE(tensors_close(y[0], naive_matmul(a, b, y[0].shape()), 1e-5, 1e-5))
        << shape_to_string(as) << " @ " << shape_to_string(bs);
  }
}

TEST(LinearMatMul, LargeIsDeterministicAcrossRuns) {
  // Big enough to take the threaded path; rows must not depend on the split.
  Tensor a = random_f32({4, 96, 128}, 40), b = random_f32({128, 160}, 41);
  auto y1 = run_single_op("MatMul", {{"a", a}, {"b", b}});
  auto y2 = run_single_op("MatMul", {{"a", a.reshaped({384, 128})}, {"b", b}});
  EXPECT_EQ(y1[0].reshaped({384, 160}), y2[0]);
}

}  // namespace
}  // namespace orchid
