#include "util/config_roots.hpp"

#include <algorithm>
#include <system_error>

namespace orchid {

namespace fs = std::filesystem;

bool looks_like_path(const std::string& s) {
  return s.find('/') != std::string::npos ||
         (s.size() > 5 && s.compare(s.size() - 5, 5, ".toml") == 0);
}

ConfigRoots::ConfigRoots(std::vector<fs::path> roots) : roots_(std::move(roots)) {}

std::optional<fs::path> ConfigRoots::find(const fs::path& relative) const {
  for (const auto& root : roots_) {
    std::error_code ec;
    const fs::path candidate = root / relative;
    if (fs::is_regular_file(candidate, ec)) return candidate;
  }
  return std::nullopt;
}

std::vector<std::string> ConfigRoots::names_in(const fs::path& folder,
                                               const std::string& extension) const {
  std::vector<std::string> names;
  for (const auto& root : roots_) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(root / folder, ec)) {
      if (entry.is_regular_file(ec) && entry.path().extension() == extension) {
        names.push_back(entry.path().stem().string());
      }
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::string ConfigRoots::describe() const {
  std::string out;
  for (const auto& root : roots_) out += (out.empty() ? "" : ", ") + root.string();
  return out.empty() ? "none" : out;
}

}  // namespace orchid
