// Benchmark case files (configs/workloads/*.toml): H2H-style modalities, each a chain of
// layers with their dimensions, plus fusion edges between modalities. Every error names
// the file, the table and the key at fault.
#pragma once

#include <cstdint>
#include <string>

#include "mapping/workload.hpp"

namespace orchid::mapping {

Workload load_case_file(const std::string& path, std::int64_t batch);
// `path` only names the text in errors and gives the default workload name.
Workload parse_case(const std::string& text, const std::string& path, std::int64_t batch);

// The index H2H's locality rule compares: the number after the last 'L' of a name of
// the form M<i>L<j>, else `fallback`.
int h2h_layer_index(const std::string& name, int fallback);

}  // namespace orchid::mapping
