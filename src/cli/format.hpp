// Number formatting for human-readable reports.
#pragma once

#include <cstdint>
#include <string>

namespace orchid::cli {

// 25557032 -> "25.56 M", 4.1e9 -> "4.10 G".
std::string human_count(double value);
// 102228128 -> "97.49 MiB".
std::string human_bytes(double bytes);

}  // namespace orchid::cli
