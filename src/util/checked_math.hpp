// Overflow-checked integer arithmetic for sizes that come from input files (shapes,
// byte counts, offsets): a wrapped product would turn a huge tensor into a tiny buffer
// that is then indexed as if it were huge.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "util/error.hpp"

namespace orchid {

inline std::optional<std::int64_t> mul_no_overflow(std::int64_t a, std::int64_t b) {
  std::int64_t out;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

inline std::optional<std::int64_t> add_no_overflow(std::int64_t a, std::int64_t b) {
  std::int64_t out;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// a * b, or an orchid::Error "<context>: <what> overflows" when it does not fit.
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, const std::string& context) {
  const auto out = mul_no_overflow(a, b);
  if (!out) fail("{}: size {} x {} overflows 64-bit arithmetic", context, a, b);
  return *out;
}

inline std::int64_t checked_add(std::int64_t a, std::int64_t b, const std::string& context) {
  const auto out = add_no_overflow(a, b);
  if (!out) fail("{}: size {} + {} overflows 64-bit arithmetic", context, a, b);
  return *out;
}

// Parses a whole string as a base-10 integer in [lo, hi]; nullopt for anything else
// (empty, trailing text, out of range). The one integer parser for option and file text.
std::optional<std::int64_t> parse_int64(const std::string& text, std::int64_t lo, std::int64_t hi);

}  // namespace orchid
