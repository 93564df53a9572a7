#include "cli/report_files.hpp"

#include <fmt/format.h>

#include "util/atomic_file.hpp"
#include "util/error.hpp"

namespace orchid::cli {

void write_report_files(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<std::pair<std::string, std::string>> on_disk;
  const std::string* to_stdout = nullptr;
  for (const auto& [target, content] : files) {
    if (target.empty()) continue;
    if (is_stdout(target)) {
      if (to_stdout) fail("only one of --json and --trace can be '-' (standard output)");
      to_stdout = &content;
    } else {
      on_disk.emplace_back(target, content);
    }
  }
  write_files_atomically(on_disk);
  if (to_stdout) fmt::print("{}", *to_stdout);
}

}  // namespace orchid::cli
