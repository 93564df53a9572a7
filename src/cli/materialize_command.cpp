// `orchid materialize IN OUT`: writes a self-contained copy of a stripped zoo model
// with the deterministic weights orchid regenerates, for other tools (ONNX Runtime).
#include <memory>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "onnx/stripped_weights.hpp"

namespace orchid::cli {

Action add_materialize_command(CLI::App& app) {
  auto paths = std::make_shared<std::pair<std::string, std::string>>();
  CLI::App* cmd = app.add_subcommand(
      "materialize", "Write a model with its stripped weights regenerated and stored inline");
  cmd->add_option("input", paths->first, "Stripped ONNX model")->required();
  cmd->add_option("output", paths->second, "Self-contained ONNX model to write")->required();
  return [paths] {
    materialize_stripped_weights(paths->first, paths->second);
    fmt::print("wrote {}\n", paths->second);
  };
}

}  // namespace orchid::cli
