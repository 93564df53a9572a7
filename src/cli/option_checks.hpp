// Checks on options beyond what CLI11 does itself.
//
// Range checks: CLI11's own Range lets NaN through (every comparison with NaN is false);
// in_range refuses NaN and infinities, and all failures read the same:
// "--option: value V is not a finite number in [LO, HI]".
//
// Combinations: an option that would have no effect with the others given is an error,
// not silently ignored ("--plan-kind has no effect without --json or --dot").
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace orchid::cli {

// A number (integer or real) in [lo, hi].
CLI::Validator in_range(double lo, double hi);

// Whether `option` (e.g. "--plan-kind") was given on `command`'s line.
bool given(const CLI::App& command, const std::string& option);

// Fails when `option` was given but none of `needed` was: it would do nothing.
void refuse_without_any(const CLI::App& command, const std::string& option,
                        const std::vector<std::string>& needed);

// Fails when `option` was given although `reason` (e.g. "the system has no GPU") makes it
// meaningless; `applies` says whether it applies.
void refuse_unless(const CLI::App& command, const std::string& option, bool applies,
                   const std::string& reason);

}  // namespace orchid::cli
