// The `orchid` subcommands. Each registers its options on the CLI11 app and runs when
// chosen; errors propagate as orchid::Error and main turns them into one stderr line.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "eval/reference_interpreter.hpp"
#include "onnx/onnx_reader.hpp"

namespace orchid::cli {

// Options every model-reading command shares: --shape NAME=1x3x224x224, --dim N=VALUE.
struct ModelOptions {
  std::string model;
  std::vector<std::string> shapes;
  std::vector<std::string> dims;
  std::int64_t memory_budget_mib = 0;  // 0: physical memory
  // Also applies --memory-budget (process-wide).
  ImportOptions import_options() const;
};
void add_model_options(CLI::App& command, ModelOptions& options);
// Only --shape and --dim (for commands whose model argument is not a plain model file).
void add_shape_options(CLI::App& command, ModelOptions& options);

using Action = std::function<void()>;

// The most threads any option may ask for.
inline constexpr int kMaxThreads = 1024;

Action add_inspect_command(CLI::App& app);
Action add_run_command(CLI::App& app);
Action add_materialize_command(CLI::App& app);
Action add_map_command(CLI::App& app);
Action add_orchestrate_command(CLI::App& app);
Action add_codegen_command(CLI::App& app);
Action add_calibrate_net_command(CLI::App& app);  // distributed_commands.cpp (MPI)

// The run command's inputs: NAME=FILE.npy specs, random values from `seed` for the rest.
TensorMap make_feed(const Graph& graph, const std::vector<std::string>& specs, std::uint64_t seed);
// Output names may contain '/' or ':'; the file name for --save-outputs replaces them.
std::string file_name_for(const std::string& tensor_name);
// --save-outputs DIR: DIR/<file_name_for(name)>.npy for each name, all written or none;
// names that sanitise to the same file are an error.
void save_outputs(const std::string& dir, const std::vector<std::string>& names,
                  const TensorMap& outputs);

// `orchid run MODEL --mapping PLAN.json` under mpirun (distributed_commands.cpp).
struct DistributedRunOptions {
  std::string mapping;             // plan from `orchid map MODEL --json`
  int batch = 0;                   // samples per inference (0: the plan's batch)
  int stream = 1;                  // inferences pipelined through the groups
  int repeat = 1;                  // timed rounds of `stream` inferences (run's --repeat)
  std::string timeline;            // measured timeline next to the predicted one (JSON)
  std::string gantt;               // the same as an SVG Gantt chart
  bool check = false;              // compare every output with the reference interpreter
  bool reference_kernels = false;  // layers on the reference kernels, not the executor
  double timeout_s = 300;
  std::string json;  // the run's report as JSON ("-": stdout only), from run's --json
};
void add_distributed_run_options(CLI::App& run, DistributedRunOptions& options);
void run_mapping_plan(const ModelOptions& model, const std::vector<std::string>& inputs,
                      std::uint64_t seed, const std::string& save_outputs,
                      const DistributedRunOptions& options);

}  // namespace orchid::cli
