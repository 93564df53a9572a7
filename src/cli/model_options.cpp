#include <cstdlib>

#include "cli/commands.hpp"
#include "util/error.hpp"

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
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 0) {
    fail("{}: '{}' is not a non-negative integer", context, text);
  }
  return v;
}

}  // namespace

ImportOptions ModelOptions::import_options() const {
  ImportOptions options;
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
    options.input_shapes[name] = shape;
  }
  for (const auto& d : dims) {
    auto [name, value] = split_assignment(d, "--dim");
    options.dim_params[name] = parse_dim(value, "--dim " + d);
  }
  return options;
}

void add_model_options(CLI::App& command, ModelOptions& options) {
  command.add_option("model", options.model, "ONNX model file")->required();
  command.add_option("--shape", options.shapes,
                     "Static shape for a graph input, e.g. input=1x3x224x224 (repeatable)");
  command.add_option("--dim", options.dims,
                     "Value for a symbolic dimension, e.g. batch_size=1 (repeatable; others "
                     "default to 1)");
}

}  // namespace orchid::cli
