// Shared by the GPU backend tests: compare outputs with the reference interpreter.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "eval/reference_interpreter.hpp"

namespace orchid::codegen::test {

// Device results agree with the reference when |got - want| <= 1e-4 + 1e-3 |want|
// elementwise (device kernels sum in a different order; transcendental functions of
// OpenCL/CUDA are within a few ulp, the reference computes them in double).
inline void expect_close(const TensorMap& got, const TensorMap& expected,
                         const std::string& where) {
  ASSERT_EQ(got.size(), expected.size()) << where;
  for (const auto& [out, want] : expected) {
    ASSERT_TRUE(got.count(out)) << where << ": output " << out << " missing";
    const Tensor& have = got.at(out);
    ASSERT_EQ(have.shape(), want.shape()) << where << ": " << out;
    std::int64_t bad = 0;
    for (std::int64_t i = 0; i < want.numel(); ++i) {
      const double b = want.get_as_double(i);
      const double a = have.get_as_double(i);
      if (!(std::fabs(a - b) <= 1e-4 + 1e-3 * std::fabs(b))) {
        if (bad++ < 3)
          ADD_FAILURE() << where << ": " << out << "[" << i << "]: " << a << " vs " << b;
      }
    }
    EXPECT_EQ(bad, 0) << where << ": " << out << " mismatching elements of " << want.numel();
  }
}

}  // namespace orchid::codegen::test
