// Where orchid finds the data it ships (devices/, systems/, designs/, workloads/ under a
// configs folder). The library never guesses a location: its caller (the CLI, the Python
// package, a test) says which configs folders to search, in order.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace orchid {

// How a name-or-path argument (`--device`, `--system`, a system's `device`) is told apart:
// anything containing '/' or ending in ".toml" is a path, the rest a name in a config folder.
bool looks_like_path(const std::string& name_or_path);

class ConfigRoots {
 public:
  ConfigRoots() = default;
  explicit ConfigRoots(std::vector<std::filesystem::path> roots);

  // The first root that holds `relative` (e.g. "devices/a100.toml") as a regular file.
  std::optional<std::filesystem::path> find(const std::filesystem::path& relative) const;
  // Stems of the regular `*extension` files in `folder` of every root, sorted, unique.
  std::vector<std::string> names_in(const std::filesystem::path& folder,
                                    const std::string& extension) const;
  const std::vector<std::filesystem::path>& roots() const { return roots_; }
  // "a, b" for error messages ("none" when empty).
  std::string describe() const;

 private:
  std::vector<std::filesystem::path> roots_;
};

}  // namespace orchid
