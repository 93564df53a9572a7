// The fused loops' vectorised exp / erf / sigmoid / tanh against double-precision libm over a
// dense sweep (bounds as documented in vector_math.hpp), and their reductions.
#include "runtime/fused/vector_math.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace orchid {
namespace {

std::vector<float> sweep(float lo, float hi, int n) {
  std::vector<float> x(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = lo + (hi - lo) * i / (n - 1);
  return x;
}

TEST(VectorMath, ExpRelativeError) {
  const auto x = sweep(-87.3f, 88.3f, 400001);
  std::vector<float> y(x.size());
  vector_math::exp(x.data(), y.data(), static_cast<std::int64_t>(x.size()));
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(static_cast<double>(x[i]));
    worst = std::max(worst, std::fabs(y[i] - want) / want);
  }
  EXPECT_LT(worst, 4e-7);
  float big = 1000.0f, small = -1000.0f, out = 0;
  vector_math::exp(&big, &out, 1);
  EXPECT_TRUE(std::isfinite(out));
  vector_math::exp(&small, &out, 1);
  EXPECT_GE(out, 0.0f);
  EXPECT_LT(out, 1e-37f);
}

TEST(VectorMath, ErfAndSigmoidAbsoluteError) {
  const auto x = sweep(-12.0f, 12.0f, 200001);
  std::vector<float> e(x.size()), s(x.size());
  vector_math::erf(x.data(), e.data(), static_cast<std::int64_t>(x.size()));
  vector_math::sigmoid(x.data(), s.data(), static_cast<std::int64_t>(x.size()));
  double worst_erf = 0, worst_sigmoid = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    worst_erf = std::max(worst_erf, std::fabs(e[i] - std::erf(v)));
    worst_sigmoid = std::max(worst_sigmoid, std::fabs(s[i] - 1.0 / (1.0 + std::exp(-v))));
  }
  EXPECT_LT(worst_erf, 6e-7);
  EXPECT_LT(worst_sigmoid, 5e-7);
}

TEST(VectorMath, TanhRelativeError) {
  const auto x = sweep(-20.0f, 20.0f, 400001);
  std::vector<float> y(x.size());
  vector_math::tanh(x.data(), y.data(), static_cast<std::int64_t>(x.size()));
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double want = std::tanh(static_cast<double>(x[i]));
    if (want != 0) worst = std::max(worst, std::fabs(y[i] - want) / std::fabs(want));
  }
  EXPECT_LT(worst, 4e-7);
  // Tiny, huge and special inputs: odd, exact at the ends, NaN through.
  const std::vector<float> edge{0.0f,
                                -0.0f,
                                1e-30f,
                                -1e-20f,
                                100.0f,
                                -1000.0f,
                                std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::quiet_NaN()};
  std::vector<float> out(edge.size());
  vector_math::tanh(edge.data(), out.data(), static_cast<std::int64_t>(edge.size()));
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_TRUE(std::signbit(out[1]));
  EXPECT_FLOAT_EQ(out[2], 1e-30f);
  EXPECT_FLOAT_EQ(out[3], -1e-20f);
  EXPECT_EQ(out[4], 1.0f);
  EXPECT_EQ(out[5], -1.0f);
  EXPECT_EQ(out[6], 1.0f);
  EXPECT_TRUE(std::isnan(out[7]));
}

// Sums, maxima and minima of every length from 1 to 70 (the 16-lane body and the tail)
// against plain double-precision loops; a NaN anywhere makes max and min NaN.
TEST(VectorMath, ReductionsMatchPlainLoopsAtEveryLength) {
  std::vector<float> x(70);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i)) * 100.0 + 1e-3 * i);
  }
  for (std::int64_t n = 1; n <= 70; ++n) {
    double sum = 0;
    float hi = x[0], lo = x[0];
    for (std::int64_t i = 0; i < n; ++i) {
      sum += x[static_cast<std::size_t>(i)];
      hi = std::max(hi, x[static_cast<std::size_t>(i)]);
      lo = std::min(lo, x[static_cast<std::size_t>(i)]);
    }
    EXPECT_NEAR(vector_math::sum(x.data(), n), sum, 1e-5 * (1 + std::fabs(sum))) << n;
    EXPECT_EQ(vector_math::max(x.data(), n), hi) << n;
    EXPECT_EQ(vector_math::min(x.data(), n), lo) << n;
  }
  for (std::size_t at : {0u, 5u, 16u, 40u, 69u}) {  // first lane, body, tail
    std::vector<float> y = x;
    y[at] = std::nanf("");
    EXPECT_TRUE(std::isnan(vector_math::max(y.data(), 70))) << at;
    EXPECT_TRUE(std::isnan(vector_math::min(y.data(), 70))) << at;
  }
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> z{1.0f, -inf, 3.0f, inf};
  EXPECT_EQ(vector_math::max(z.data(), 4), inf);
  EXPECT_EQ(vector_math::min(z.data(), 4), -inf);
}

}  // namespace
}  // namespace orchid
