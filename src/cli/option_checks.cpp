#include "cli/option_checks.hpp"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "util/error.hpp"

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

bool given(const CLI::App& command, const std::string& option) {
  const CLI::Option* o = command.get_option_no_throw(option);
  if (o == nullptr) internal_error("option {} is not defined on '{}'", option, command.get_name());
  return o->count() > 0;
}

void refuse_without_any(const CLI::App& command, const std::string& option,
                        const std::vector<std::string>& needed) {
  if (!given(command, option)) return;
  for (const std::string& n : needed) {
    if (given(command, n)) return;
  }
  std::string list;
  for (std::size_t i = 0; i < needed.size(); ++i) {
    list += (i == 0 ? "" : i + 1 == needed.size() ? " or " : ", ") + needed[i];
  }
  fail("{} has no effect without {}", option, list);
}

void refuse_unless(const CLI::App& command, const std::string& option, bool applies,
                   const std::string& reason) {
  if (given(command, option) && !applies) fail("{} has no effect: {}", option, reason);
}

}  // namespace orchid::cli
