#include "cli/config_dirs.hpp"

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <system_error>

namespace orchid::cli {

namespace {

namespace fs = std::filesystem;

std::string& flag_value() {
  static std::string value;
  return value;
}

// share/orchid/configs relative to bin/orchid, so an installed tree can be moved.
std::optional<fs::path> installed_configs() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  const fs::path dir = exe.parent_path().parent_path() / "share" / "orchid" / "configs";
  if (fs::is_directory(dir, ec)) return dir;
  return std::nullopt;
}

ConfigRoots make_roots() {
  std::vector<fs::path> roots;
  if (!flag_value().empty()) roots.emplace_back(flag_value());
  if (const char* env = std::getenv("ORCHID_CONFIG_DIR"); env != nullptr && *env != '\0') {
    roots.emplace_back(env);
  }
  if (auto installed = installed_configs()) roots.push_back(*installed);
  std::error_code ec;
  const fs::path source = fs::path(ORCHID_SOURCE_DIR) / "configs";
  if (fs::is_directory(source, ec)) roots.push_back(source);
  return ConfigRoots(std::move(roots));
}

}  // namespace

void add_config_dir_option(CLI::App& app) {
  app.add_option("--config-dir", flag_value(),
                 "configs folder searched first for devices/, systems/, designs/, workloads/ "
                 "(then $ORCHID_CONFIG_DIR, the installed share/orchid/configs, the source tree)")
      ->check(CLI::ExistingDirectory);
}

const ConfigRoots& config_roots() {
  static const ConfigRoots roots = make_roots();
  return roots;
}

}  // namespace orchid::cli
