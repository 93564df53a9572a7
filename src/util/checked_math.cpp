#include "util/checked_math.hpp"

#include <cerrno>
#include <cstdlib>

namespace orchid {

std::optional<std::int64_t> parse_int64(const std::string& text, std::int64_t lo, std::int64_t hi) {
  if (text.empty() || text.size() > 32) return std::nullopt;
  // strtoll skips leading blanks and accepts "+": neither is an integer as users write it.
  const char first = text.front();
  if (first != '-' && (first < '0' || first > '9')) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || end != text.c_str() + text.size()) return std::nullopt;
  if (v < lo || v > hi) return std::nullopt;
  return static_cast<std::int64_t>(v);
}

}  // namespace orchid
