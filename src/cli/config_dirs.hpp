// The config roots the CLI hands the library, in search order: --config-dir, then
// $ORCHID_CONFIG_DIR, then the installed share/orchid/configs beside the binary, then the
// source tree this binary was built from (a development fallback only).
#pragma once

#include <CLI/CLI.hpp>

#include "util/config_roots.hpp"

namespace orchid::cli {

// Registers the global --config-dir option on the top-level app.
void add_config_dir_option(CLI::App& app);
// The roots for this invocation (valid after parsing).
const ConfigRoots& config_roots();

}  // namespace orchid::cli
