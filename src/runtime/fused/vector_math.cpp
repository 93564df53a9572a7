#include "runtime/fused/vector_math.hpp"

#include <bit>
#include <cstring>

namespace orchid::vector_math {

namespace {

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define ORCHID_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
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
// with NaN handling scalar, and these map to one register per step on each clone's ISA
// (AVX-512: one zmm; AVX2: two ymm; baseline: four xmm).
using Floats16 = float __attribute__((vector_size(64)));
using Ints16 = int __attribute__((vector_size(64)));
using Floats8 = float __attribute__((vector_size(32)));
using Doubles8 = double __attribute__((vector_size(64)));
constexpr std::int64_t kLanes = 16;

// Max (or min) over n >= 1 elements, 16 lanes at a time; NaN when any element is.
template <bool IsMax>
inline float extreme(const float* __restrict x, std::int64_t n) {
  Floats16 acc = x[0] - Floats16{};
  Ints16 nan{};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    Floats16 v;
    std::memcpy(&v, x + i, sizeof v);
    acc = IsMax ? (v > acc ? v : acc) : (v < acc ? v : acc);
    nan |= v != v;
  }
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

// Adds in double, as the reference interpreter does, 16 lanes at a time.
ORCHID_CLONES float sum(const float* __restrict x, std::int64_t n) {
  Doubles8 lo_acc{}, hi_acc{};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    Floats8 lo, hi;
    std::memcpy(&lo, x + i, sizeof lo);
    std::memcpy(&hi, x + i + 8, sizeof hi);
    lo_acc += __builtin_convertvector(lo, Doubles8);
    hi_acc += __builtin_convertvector(hi, Doubles8);
  }
  const Doubles8 acc = lo_acc + hi_acc;
  double s = 0;
  for (int j = 0; j < 8; ++j) s += acc[j];
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

ORCHID_CLONES void sigmoid(const float* __restrict x, float* __restrict y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + exp_one(-x[i]));
}

}  // namespace orchid::vector_math
