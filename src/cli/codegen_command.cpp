// `orchid codegen MODEL --device D --target cuda|opencl --out DIR`: orchestrates for a
// device model and writes the plan's generated kernels, launch sequence, constants and
// a build file (codegen/write_sources.hpp).
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/config_dirs.hpp"
#include "cli/cost_options.hpp"
#include "codegen/plan_codegen.hpp"
#include "codegen/write_sources.hpp"
#include "cost/cost_model.hpp"
#include "orchestrate/orchestrator.hpp"
#include "passes/load_model.hpp"

namespace orchid::cli {

namespace {

struct CodegenOptions {
  ModelOptions model;
  std::string device = "a100";
  std::string target = "cuda";
  std::string out;
  std::string plan_kind = "optimal";
};

void run_codegen(const CodegenOptions& options) {
  const codegen::Target target = codegen::parse_target(options.target);
  const LoadedModel loaded = load_model(options.model.model, options.model.import_options());
  loaded.graph.require_static_shapes(fmt::format("'{}': code generation", options.model.model));
  const auto cost_model =
      make_analytic_cost_model(load_device_spec(options.device, config_roots()));
  const Orchestration o = orchestrate(loaded.graph, *cost_model, OrchestrateOptions{});
  const Plan& plan = plan_of_kind(o, options.plan_kind);
  const codegen::DeviceProgram program =
      codegen::generate_device_program(o.fission.graph, plan, o.fission.alternatives, target);
  const std::string written = codegen::write_program_sources(program, options.out);
  fmt::print("model    {}  ({} plan for {}, {} kernels)\n", options.model.model, plan.kind,
             options.device, plan.kernels.size());
  fmt::print("target   {}: {} device kernels, weights {:.1f} MiB, arena {:.1f} MiB\n",
             options.target, program.launches.size(),
             static_cast<double>(program.weights_bytes) / (1024.0 * 1024.0),
             static_cast<double>(program.arena_bytes) / (1024.0 * 1024.0));
  fmt::print("wrote\n{}", written);
}

}  // namespace

Action add_codegen_command(CLI::App& app) {
  auto options = std::make_shared<CodegenOptions>();
  CLI::App* cmd = app.add_subcommand(
      "codegen", "Write a plan's GPU kernels (CUDA or OpenCL), launches and a build file");
  add_model_options(*cmd, options->model);
  cmd->add_option("--device", options->device,
                  "Device model to orchestrate for (configs/devices name or TOML path)")
      ->default_val("a100");
  cmd->add_option("--target", options->target, "cuda or opencl")
      ->check(CLI::IsMember({"cuda", "opencl"}))
      ->default_val("cuda");
  cmd->add_option("--out", options->out, "Directory to write into")->required();
  add_plan_kind_option(*cmd, options->plan_kind, "Which plan to generate");
  return [options] { run_codegen(*options); };
}

}  // namespace orchid::cli
