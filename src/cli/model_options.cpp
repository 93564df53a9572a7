#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "util/checked_math.hpp"
#include "util/error.hpp"
#include "util/memory_budget.hpp"

namespace orchid::cli {

namespace {

std::pair<std::string, std::string> split_assignment(const std::string& text, const char* option) {
  const auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    fail("{} '{}' should look like NAME=VALUE", option, text);
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::int64_t parse_dim(const std::string& text, const std::string& context) {
  const auto v = parse_int64(text, 0, INT64_MAX);  // the shape's size is checked as a whole
  if (!v) fail("{}: '{}' is not a non-negative 64-bit integer", context, text);
  return *v;
}

}  // namespace

ImportOptions ModelOptions::import_options() const {
  if (memory_budget_mib > 0) set_memory_budget(memory_budget_mib << 20);
  ImportOptions options;
  options.warn = [](const std::string& message) {
    fmt::print(stderr, "orchid: warning: {}\n", message);
  };
  for (const auto& s : shapes) {
    auto [name, value] = split_assignment(s, "--shape");
    Shape shape;
    std::size_t start = 0;
    while (start <= value.size()) {
      const auto x = value.find('x', start);
      const std::string part = value.substr(start, x == std::string::npos ? x : x - start);
      shape.push_back(parse_dim(part, "--shape " + s));
      if (x == std::string::npos) break;
      start = x + 1;
    }
    checked_numel(shape, "--shape " + s);
    if (!options.input_shapes.emplace(name, shape).second) {
      fail("--shape: '{}' is given more than once", name);
    }
  }
  for (const auto& d : dims) {
    auto [name, value] = split_assignment(d, "--dim");
    if (!options.dim_params.emplace(name, parse_dim(value, "--dim " + d)).second) {
      fail("--dim: '{}' is given more than once", name);
    }
  }
  return options;
}

void add_shape_options(CLI::App& command, ModelOptions& options) {
  command.add_option("--shape", options.shapes,
                     "Static shape for a graph input, e.g. input=1x3x224x224 (repeatable)");
  command.add_option("--dim", options.dims,
                     "Value for a symbolic dimension, e.g. batch_size=1 (repeatable; others "
                     "default to 1, with a warning naming each)");
}

void add_model_options(CLI::App& command, ModelOptions& options) {
  command.add_option("model", options.model, "ONNX model file")->required();
  add_shape_options(command, options);
  command
      .add_option("--memory-budget", options.memory_budget_mib,
                  "Most MiB one model may make orchid allocate (default: physical memory)")
      ->check(in_range(1, 1 << 30));
}

}  // namespace orchid::cli
