#include "cli/option_checks.hpp"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace orchid::cli {

CLI::Validator in_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v < lo ||
            v > hi) {
          return fmt::format("value '{}' is not a finite number in [{}, {}]", text, lo, hi);
        }
        return {};
      },
      fmt::format("in [{}, {}]", lo, hi));
}

}  // namespace orchid::cli
