// Range checks for numeric options. CLI11's own Range lets NaN through (every comparison
// with NaN is false); these refuse NaN and infinities, and all failures read the same:
// "--option: value V is not a finite number in [LO, HI]".
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace orchid::cli {

// A number (integer or real) in [lo, hi].
CLI::Validator in_range(double lo, double hi);

}  // namespace orchid::cli
