// Machine-readable outputs of `inspect`, `run` and `map` (--json FILE, --trace FILE): a
// FILE of "-" means standard output, and then the text report is left out so that stdout
// is one JSON document; other files are written together, atomically.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace orchid::cli {

inline bool is_stdout(const std::string& target) {
  return target == "-";
}

// (target, content) pairs with an empty target are skipped; at most one may be "-".
void write_report_files(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace orchid::cli
