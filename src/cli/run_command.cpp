// `orchid run MODEL`: executes the model and reports outputs and time.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "passes/load_model.hpp"
#include "runtime/random_inputs.hpp"
#include "runtime/reference_interpreter.hpp"
#include "util/error.hpp"
#include "util/npy.hpp"

namespace orchid::cli {

namespace {

struct RunOptions {
  ModelOptions model;
  std::vector<std::string> inputs;
  std::uint64_t seed = 0;
  std::string save_outputs;
  int repeat = 1;
};

// Output names may contain '/' or ':' (e.g. "logits/Add:0"); files may not.
std::string file_name_for(const std::string& tensor_name) {
  std::string out = tensor_name;
  for (char& c : out) {
    if (c == '/' || c == ':' || c == '\\') c = '_';
  }
  return out;
}

void run(const RunOptions& options) {
  if (options.repeat < 1) fail("--repeat must be at least 1, got {}", options.repeat);
  const LoadedModel loaded = load_model(options.model.model, options.model.import_options());
  const Graph& g = loaded.graph;

  TensorMap feed = make_random_inputs(g, options.seed);
  for (const auto& spec : options.inputs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) fail("--input '{}' should be NAME=FILE.npy", spec);
    const std::string name = spec.substr(0, eq);
    const std::string file = spec.substr(eq + 1);
    if (std::find(g.inputs.begin(), g.inputs.end(), name) == g.inputs.end()) {
      fail("--input: the model has no input named '{}'", name);
    }
    Tensor value = read_npy(file);
    const TensorInfo& info = g.tensor(name);
    if (value.shape() != info.shape) {
      fail("--input {}: '{}' has shape {}, the model expects {}", name, file,
           shape_to_string(value.shape()), shape_to_string(info.shape));
    }
    if (value.dtype() != info.dtype) {
      fail("--input {}: '{}' has dtype {}, the model expects {}", name, file,
           dtype_name(value.dtype()), dtype_name(info.dtype));
    }
    feed[name] = std::move(value);
  }

  ReferenceInterpreter interpreter(g);
  std::vector<double> times;
  TensorMap outputs;
  for (int r = 0; r < options.repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    outputs = interpreter.run(feed);
    const auto stop = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
  }

  fmt::print("model    {}  (reference interpreter)\n", options.model.model);
  for (const auto& name : g.outputs) {
    const Tensor& t = outputs.at(name);
    double sum = 0.0;
    double abs_sum = 0.0;
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      const double v = t.get_as_double(i);
      sum += v;
      abs_sum += std::fabs(v);
    }
    fmt::print("output   {}  {} {}  sum {:.6g}  mean|x| {:.6g}\n", name, dtype_name(t.dtype()),
               shape_to_string(t.shape()), sum,
               t.numel() ? abs_sum / static_cast<double>(t.numel()) : 0.0);
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  fmt::print("time     {:.2f} ms median over {} run(s) (min {:.2f} ms)\n",
             sorted[sorted.size() / 2], sorted.size(), sorted.front());

  if (!options.save_outputs.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.save_outputs, ec);
    if (ec) fail("--save-outputs: cannot create '{}': {}", options.save_outputs, ec.message());
    for (const auto& name : g.outputs) {
      const std::string path =
          (std::filesystem::path(options.save_outputs) / (file_name_for(name) + ".npy")).string();
      write_npy(path, outputs.at(name));
    }
    fmt::print("saved    {} output(s) to {}\n", g.outputs.size(), options.save_outputs);
  }
}

}  // namespace

Action add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Run a model on the CPU and report its outputs");
  add_model_options(*cmd, options->model);
  cmd->add_option("--input", options->inputs,
                  "Input value from a .npy file: NAME=FILE.npy (repeatable; others are random)");
  cmd->add_option("--seed", options->seed, "Seed for random inputs")->default_val(0);
  cmd->add_option("--save-outputs", options->save_outputs,
                  "Write each output to DIR/<output-name>.npy");
  cmd->add_option("--repeat", options->repeat, "Number of timed runs")->default_val(1);
  return [options] { run(*options); };
}

}  // namespace orchid::cli
