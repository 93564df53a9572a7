// The config roots the tests use: the source tree's configs/, the same folder the CLI
// falls back to in a development build.
#pragma once

#include <filesystem>

#include "util/config_roots.hpp"

namespace orchid::test {

inline const ConfigRoots& source_configs() {
  static const ConfigRoots roots({std::filesystem::path(ORCHID_SOURCE_DIR) / "configs"});
  return roots;
}

}  // namespace orchid::test
