// The `orchid` subcommands. Each registers its options on the CLI11 app and runs when
// chosen; errors propagate as orchid::Error and main turns them into one stderr line.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "onnx/onnx_reader.hpp"

namespace orchid::cli {

// Options every model-reading command shares: --shape NAME=1x3x224x224, --dim N=VALUE.
struct ModelOptions {
  std::string model;
  std::vector<std::string> shapes;
  std::vector<std::string> dims;
  ImportOptions import_options() const;
};
void add_model_options(CLI::App& command, ModelOptions& options);

using Action = std::function<void()>;

Action add_inspect_command(CLI::App& app);
Action add_run_command(CLI::App& app);
Action add_materialize_command(CLI::App& app);
Action add_map_command(CLI::App& app);
Action add_orchestrate_command(CLI::App& app);
Action add_codegen_command(CLI::App& app);

}  // namespace orchid::cli
