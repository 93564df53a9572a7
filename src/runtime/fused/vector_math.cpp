#include "runtime/fused/vector_math.hpp"

#include <bit>
#include <cstring>

namespace orchid::vector_math {

namespace {

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
// AVX2 as x86-64-v3, with FMA: the polynomials without it took 1.8x as long (a SiLU
// over 692K elements, 0.83 -> 0.45 ms on 2 cores).
#define ORCHID_CLONES __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
#else
#define ORCHID_CLONES
#endif

// e^x: x = k ln2 + r with |r| <= ln2 / 2, e^r by a degree-6 polynomial (Cephes' expf
// coefficients), 2^k put straight into the exponent bits.
inline float exp_one(float x) {
  x = x < -87.3f ? -87.3f : x;
  x = x > 88.3f ? 88.3f : x;
  const float k = __builtin_floorf(x * 1.44269504088896341f + 0.5f);
  const float r = (x - k * 0.693359375f) + k * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const std::int32_t bits = (static_cast<std::int32_t>(k) + 127) << 23;
  return p * std::bit_cast<float>(bits);
}

// Reductions are written with GCC's vector types: the auto-vectoriser leaves a reduction
// with NaN handling scalar. The types are 32 bytes, one ymm register on AVX2 and AVX-512
// alike: 64-byte ones, which AVX2 has no register for, made GCC's AVX2 clones go element
// by element through the stack (max 4.5x, sum 2.4x slower than the AVX-512 clones on a
// softmax's 197-element rows). Several accumulators keep the adds' latency off the path.
using Floats8 = float __attribute__((vector_size(32)));
using Ints8 = int __attribute__((vector_size(32)));
using Floats4 = float __attribute__((vector_size(16)));
using Doubles4 = double __attribute__((vector_size(32)));
constexpr std::int64_t kLanes = 8;

// Max (or min) over n >= 1 elements, 16 at a time in two accumulators; NaN when any
// element is.
template <bool IsMax>
inline float extreme(const float* __restrict x, std::int64_t n) {
  Floats8 acc0 = x[0] - Floats8{}, acc1 = acc0;
  Ints8 nan{};
  std::int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    Floats8 v0, v1;
    std::memcpy(&v0, x + i, sizeof v0);
    std::memcpy(&v1, x + i + kLanes, sizeof v1);
    acc0 = IsMax ? (v0 > acc0 ? v0 : acc0) : (v0 < acc0 ? v0 : acc0);
    acc1 = IsMax ? (v1 > acc1 ? v1 : acc1) : (v1 < acc1 ? v1 : acc1);
    nan |= (v0 != v0) | (v1 != v1);
  }
  const Floats8 acc = IsMax ? (acc1 > acc0 ? acc1 : acc0) : (acc1 < acc0 ? acc1 : acc0);
  float r = acc[0];
  int any_nan = 0;
  for (int j = 0; j < kLanes; ++j) {
    r = IsMax ? (acc[j] > r ? acc[j] : r) : (acc[j] < r ? acc[j] : r);
    any_nan |= nan[j];
  }
  for (; i < n; ++i) {
    const float v = x[i];
    r = IsMax ? (v > r ? v : r) : (v < r ? v : r);
    any_nan |= v != v;
  }
  return any_nan ? __builtin_nanf("") : r;
}

}  // namespace

// Adds in double, as the reference interpreter does, 16 elements at a time in four
// accumulators.
ORCHID_CLONES float sum(const float* __restrict x, std::int64_t n) {
  Doubles4 acc[4] = {};
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int k = 0; k < 4; ++k) {
      Floats4 part;
      std::memcpy(&part, x + i + 4 * k, sizeof part);
      acc[k] += __builtin_convertvector(part, Doubles4);
    }
  }
  const Doubles4 total = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  double s = (total[0] + total[1]) + (total[2] + total[3]);
  for (; i < n; ++i) s += static_cast<double>(x[i]);
  return static_cast<float>(s);
}

ORCHID_CLONES float max(const float* __restrict x, std::int64_t n) {
  return extreme<true>(x, n);
}

ORCHID_CLONES float min(const float* __restrict x, std::int64_t n) {
  return extreme<false>(x, n);
}

ORCHID_CLONES void exp(const float* __restrict x, float* __restrict y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = exp_one(x[i]);
}

// Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7), odd symmetry restored.
ORCHID_CLONES void erf(const float* __restrict x, float* __restrict y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float a = __builtin_fabsf(v);
    const float t = 1.0f / (1.0f + 0.3275911f * a);
    float p = 1.061405429f;
    p = p * t - 1.453152027f;
    p = p * t + 1.421413741f;
    p = p * t - 0.284496736f;
    p = p * t + 0.254829592f;
    const float e = 1.0f - p * t * exp_one(-a * a);
    y[i] = __builtin_copysignf(e, v);
  }
}

// Odd: below 0.55 in magnitude the Taylor series to x^15 (the next term is under 5e-8 of
// the result there), above it 1 - 2 / (e^{2|x|} + 1), where tanh >= 0.5 keeps the
// subtraction's rounding relative error under 4e-7. Both are computed and one is chosen,
// so the loop has no branch to keep it from vectorising. Past |x| = 44 exp_one's clamp
// gives exactly 1.
ORCHID_CLONES void tanh(const float* __restrict x, float* __restrict y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float a = __builtin_fabsf(v);
    const float s = a * a;
    float p = -929569.0f / 638512875.0f;
    p = p * s + 21844.0f / 6081075.0f;
    p = p * s - 1382.0f / 155925.0f;
    p = p * s + 62.0f / 2835.0f;
    p = p * s - 17.0f / 315.0f;
    p = p * s + 2.0f / 15.0f;
    p = p * s - 1.0f / 3.0f;
    const float small = a + a * s * p;
    const float large = 1.0f - 2.0f / (exp_one(2.0f * a) + 1.0f);
    y[i] = __builtin_copysignf(a < 0.55f ? small : large, v);
  }
}

ORCHID_CLONES void sigmoid(const float* __restrict x, float* __restrict y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + exp_one(-x[i]));
}

}  // namespace orchid::vector_math
