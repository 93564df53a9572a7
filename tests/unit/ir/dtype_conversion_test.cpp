// The f16 and bf16 conversions (ir/dtype.cpp) against their definition, exhaustively
// over all 16-bit patterns: every value round-trips, and values between two neighbours
// round to the nearer one, ties to the even pattern.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "ir/dtype.hpp"

namespace orchid {
namespace {

template <typename Widen, typename Narrow>
void expect_round_to_nearest_even(Widen widen, Narrow narrow, std::uint32_t max_finite) {
  for (std::uint32_t h = 0; h <= 0xffffu; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = widen(bits);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(widen(narrow(f)))) << h;
      continue;
    }
    ASSERT_EQ(narrow(f), bits) << "round trip of " << h;
    if ((h & 0x7fffu) >= max_finite) continue;            // the largest finite value and inf
    const auto next = static_cast<std::uint16_t>(h + 1);  // the neighbour away from zero
    const float g = widen(next);
    const float mid = f / 2 + g / 2;  // exact: one more mantissa bit than the 16-bit type
    ASSERT_EQ(narrow(mid), (h & 1u) ? next : bits) << "tie between " << h << " and " << h + 1;
    ASSERT_EQ(narrow(std::nextafter(mid, f)), bits) << h;
    ASSERT_EQ(narrow(std::nextafter(mid, g)), next) << h;
  }
}

TEST(DtypeConversion, HalfRoundsToNearestEven) {
  expect_round_to_nearest_even(half_to_float, float_to_half, 0x7bffu);
  EXPECT_EQ(float_to_half(65519.0f), 0x7bffu);  // below the tie with 65536: the max
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00u);  // the tie rounds to even: inf
  EXPECT_EQ(float_to_half(1e-8f), 0x0000u);     // under half the smallest subnormal
  EXPECT_EQ(float_to_half(-3e-8f), 0x8001u);    // over half of it: -smallest subnormal
}

TEST(DtypeConversion, Bfloat16RoundsToNearestEven) {
  expect_round_to_nearest_even(bfloat16_to_float, float_to_bfloat16, 0x7f7fu);
  EXPECT_EQ(float_to_bfloat16(std::ldexp(1.0f, 127) * 1.9999999f), 0x7f80u);  // rounds to inf
}

}  // namespace
}  // namespace orchid
