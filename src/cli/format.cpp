#include "cli/format.hpp"

#include <fmt/format.h>

namespace orchid::cli {

std::string human_count(double value) {
  const char* units[] = {"", " k", " M", " G", " T", " P"};
  int unit = 0;
  while (value >= 1000.0 && unit < 5) {
    value /= 1000.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f}", value) : fmt::format("{:.2f}{}", value, units[unit]);
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.2f} {}", bytes, units[unit]);
}

}  // namespace orchid::cli
