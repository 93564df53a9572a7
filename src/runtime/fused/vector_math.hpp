// Array versions of the transcendental functions and reductions fused loops spend their
// time in (softmax's Exp, Max and Sum, GELU's Erf or Tanh, Sigmoid, LayerNorm's Mean). std::exp /
// std::erf are scalar library calls that no compiler vectorises; these are branch-free polynomial
// forms that GCC turns into AVX-512 / AVX2 code, chosen at load time (target_clones), so the build
// stays portable (-march=x86-64) and still uses the wide units where they exist.
//
// Accuracy against the double-precision functions (checked by vector_math_test over a
// dense sweep): exp within 4e-7 relative on [-87.3, 88.3] (the input is clamped to that
// range, so it never returns 0 or inf), erf within 6e-7 absolute, sigmoid within 5e-7
// absolute, tanh within 4e-7 relative. The executor's tolerance against the reference interpreter
// is |a - b| <= 1e-4 + 1e-3 |b|.
#pragma once

#include <cstdint>

namespace orchid::vector_math {

void exp(const float* x, float* y, std::int64_t n);
void erf(const float* x, float* y, std::int64_t n);
void sigmoid(const float* x, float* y, std::int64_t n);
void tanh(const float* x, float* y, std::int64_t n);

// Reductions of n >= 1 elements with independent partial results per vector lane, so they
// run at the vector units' throughput instead of one add's latency per element. sum adds
// in double (as the reference interpreter does); max / min return NaN when any element is.
float sum(const float* x, std::int64_t n);
float max(const float* x, std::int64_t n);
float min(const float* x, std::int64_t n);

}  // namespace orchid::vector_math
