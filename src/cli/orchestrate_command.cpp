// `orchid orchestrate MODEL --device DEVICE`: optimal kernel orchestration for one device.
#include <chrono>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/config_dirs.hpp"
#include "cli/cost_options.hpp"
#include "cli/format.hpp"
#include "cli/option_checks.hpp"
#include "cost/cost_model.hpp"
#include "eval/random_inputs.hpp"
#include "orchestrate/orchestrator.hpp"
#include "orchestrate/plan_export.hpp"
#include "passes/load_model.hpp"
#include "passes/static_part.hpp"
#include "passes/widen_half_floats.hpp"
#include "profile/plan_selection.hpp"
#include "profile/plan_selection_cache.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"

namespace orchid::cli {

namespace {

struct OrchestrateCliOptions {
  ModelOptions model;
  std::string device = "a100";
  std::string json;
  std::string dot;
  double time_limit = 60;
  std::size_t max_kernel_size = 10;
  std::size_t region_size = 48;
  bool no_softmax_alternative = false;
  CostCliOptions cost;
  std::string plan_kind = "optimal";
  bool static_part = false;
  int k_best = 3;  // --plan-kind fastest
  double select_seconds = 2;
  bool reselect = false;
};

constexpr const char* kOrchestratePlanKinds[] = {"optimal", "operator-level", "per-primitive",
                                                 "greedy-fusion", "fastest"};

// --plan-kind fastest: the BLP's k best plans and greedy fusion timed end to end on this
// CPU (random inputs, seed 0), the fastest written; the choice is cached as `orchid run`
// caches it, under the same key.
const Plan& select_fastest(const OrchestrateCliOptions& o, const Graph& graph,
                           const Orchestration& result) {
  PlanChoiceOptions co;
  co.budget_seconds = o.select_seconds;
  co.k_best = o.k_best;
  co.costs = o.cost.profile ? "measured " + o.cost.profile_db : "analytic";
  co.reselect = o.reselect;
  const PlanChoice choice =
      choose_fastest_plan(o.model.model, graph, result.fission, plan_candidates(result),
                          make_random_inputs(graph, 0), co);
  std::string timed;
  const auto add = [&](const std::string& kind, double ms) {
    timed += fmt::format("{}{} {:.3g}", timed.empty() ? "" : ", ", kind, ms);
  };
  if (choice.reused) {
    for (const PlanTrial& t : choice.reused->trials) add(t.kind, t.median_ms);
    fmt::print(
        "select       {} (cached in {}; timed then, median ms: {}; --reselect times "
        "them again)\n",
        choice.plan->kind, choice.cache, timed);
  } else {
    for (const PlanTrial& t : choice.selection.trials) add(t.kind, t.median_ms);
    fmt::print(
        "select       {} ({} candidate plans timed end to end, {} rounds in {:.2f} s, "
        "median ms: {})\n",
        choice.plan->kind, choice.selection.trials.size(), choice.selection.rounds,
        choice.selection.seconds, timed);
  }
  return *choice.plan;
}

// What the table and messages call a plan: a time-limited BLP that stopped short of proof
// found the best plan it could, not a proven optimum.
std::string plan_label(const Orchestration& result, const Plan& plan) {
  if (&plan != &result.optimal || result.stats.proven_optimal) return plan.kind;
  return fmt::format("best found (gap {:.2f} %)", 100 * result.stats.blp_gap);
}

void orchestrate_command(const OrchestrateCliOptions& o, const CLI::App& cmd) {
  refuse_without_any(cmd, "--plan-kind", {"--json", "--dot"});
  const auto start = std::chrono::steady_clock::now();
  LoadedModel loaded = load_model(o.model.model, o.model.import_options());
  const Node* dynamic = loaded.graph.first_dynamic_node();
  refuse_unless(cmd, "--static-part", dynamic != nullptr,
                fmt::format("'{}' has no data-dependent shapes", o.model.model));
  if (dynamic && o.static_part) {
    const std::size_t all = loaded.graph.nodes.size();
    loaded.graph = static_part(loaded.graph);
    fmt::print(
        "static part  {} of {} nodes, before the data-dependent shapes that start at {}; its {} "
        "outputs are what the rest reads\n",
        loaded.graph.nodes.size(), all, dynamic->describe(), loaded.graph.outputs.size());
  }
  if (loaded.graph.first_dynamic_node()) {
    try {
      loaded.graph.require_static_shapes(fmt::format("'{}': kernel orchestration", o.model.model));
    } catch (const UnsupportedError& e) {
      throw UnsupportedError(
          fmt::format("{}; --static-part orchestrates the nodes before the first one", e.what()));
    }
  }
  const DeviceSpec spec = load_device_spec(o.device, config_roots());
  const bool fastest = o.plan_kind == "fastest";
  for (const char* option : {"--k-best", "--select-seconds", "--reselect"}) {
    refuse_unless(cmd, option, fastest, "--plan-kind is not fastest");
  }
  if (fastest && spec.kind != "cpu") {
    fail("--plan-kind fastest times the plans on this CPU; --device '{}' is not the CPU", o.device);
  }
  if (fastest && has_half_floats(loaded.graph)) {
    fail(
        "--plan-kind fastest: '{}' has f16/bf16 tensors, which the CPU runs widened to f32; "
        "`orchid run {} --device cpu` selects its plan",
        o.model.model, o.model.model);
  }
  const auto cost_model = make_cost_model(spec, o.cost);
  OrchestrateOptions options;
  if (fastest) options.k_best = static_cast<std::size_t>(o.k_best);
  options.time_limit_s = o.time_limit;
  options.rules.max_nodes = o.max_kernel_size;
  options.region_target_size = o.region_size;
  options.softmax_matmul_alternative = !o.no_softmax_alternative;
  // Measured on this CPU, or plans to be timed on it: refined by timing the plans whole
  // (in_context_costs.hpp), as `orchid run`'s default selection is.
  const bool in_context =
      (o.cost.profile || fastest) && spec.kind == "cpu" && o.cost.context_rounds > 0;
  InContextReport in_context_report;
  const Orchestration result = orchestrate_with_costs(loaded.graph, *cost_model, o.cost, options,
                                                      in_context, &in_context_report);
  const OrchestrationStats& s = result.stats;
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  fmt::print("model        {}\n", o.model.model);
  fmt::print("device       {}\n", result.device);
  fmt::print("ONNX nodes   {}\n", s.model_nodes);
  fmt::print("primitives   {} (+{} in alternative subgraphs)\n", s.primitives,
             s.alternative_primitives);
  fmt::print(
      "regions      {} ({} single-tensor cuts available, {} multi-tensor cuts of wide regions)\n",
      s.regions, s.possible_cuts, s.multi_tensor_cuts);
  fmt::print("candidates   {} (largest region {})\n", s.candidates, s.largest_region_candidates);
  fmt::print("kernels      {} chosen\n", result.optimal.kernels.size());
  fmt::print("BLP          objective {:.2f} us, bound {:.2f} us, gap {:.4f}%, {} nodes, {}\n",
             s.blp_objective_us, s.blp_bound_us, 100 * s.blp_gap, s.blp_nodes,
             s.proven_optimal ? "proven optimal" : "time limit reached");
  fmt::print("time         enumerate {:.2f} s, cost {:.2f} s, solve {:.2f} s, total {:.2f} s\n",
             s.enumerate_seconds, s.cost_seconds, s.solve_seconds, total);
  fmt::print("\n{:<26} {:>8} {:>14} {:>10} {:>12}\n", "plan", "kernels", "latency (us)", "speedup",
             "arena");
  const Plan* plans[] = {&result.optimal, &result.greedy, &result.operator_level,
                         &result.per_primitive};
  for (const Plan* p : plans) {
    fmt::print("{:<26} {:>8} {:>14.2f} {:>9.3f}x {:>12}\n", plan_label(result, *p),
               p->kernels.size(), p->total_us, p->total_us / result.optimal.total_us,
               human_bytes(static_cast<double>(p->arena_bytes)));
  }
  fmt::print("(speedup = that plan's latency / {} latency{})\n",
             s.proven_optimal ? "optimal" : "best found",
             o.cost.profile ? "; latencies are sums of measured kernel times" : "");
  report_measured_costs(*cost_model, o.cost, o.model.model);
  if (in_context) fmt::print("in context   {}\n", describe_in_context(in_context_report));
  const Plan& chosen =
      fastest ? select_fastest(o, loaded.graph, result) : plan_of_kind(result, o.plan_kind);
  // Both files or neither: contents first, then one atomic step.
  std::vector<std::pair<std::string, std::string>> files;
  if (!o.json.empty()) files.emplace_back(o.json, plan_to_json(result, chosen, o.model.model));
  if (!o.dot.empty()) files.emplace_back(o.dot, plan_to_dot(result, chosen));
  write_files_atomically(files);
  for (const auto& [path, content] : files)
    fmt::print("wrote {} ({} plan)\n", path, plan_label(result, chosen));
}

}  // namespace

Action add_orchestrate_command(CLI::App& app) {
  auto o = std::make_shared<OrchestrateCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "orchestrate", "Choose the optimal set of fused kernels for a device (fission + BLP)");
  add_model_options(*cmd, o->model);
  cmd->add_option("--device", o->device, "Device spec name (configs/devices) or .toml path")
      ->default_val("a100");
  cmd->add_option("--json", o->json, "Write the plan (--plan-kind, default optimal) as JSON");
  cmd->add_option("--dot", o->dot,
                  "Write the primitive graph coloured by the plan's kernels (Graphviz)");
  cmd->add_option("--plan-kind", o->plan_kind,
                  "Which plan --json and --dot write: optimal, operator-level, per-primitive, "
                  "greedy-fusion, or (--device cpu) fastest: the --k-best best plans and greedy "
                  "fusion timed end to end on this CPU, the fastest kept")
      ->default_val("optimal")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(kOrchestratePlanKinds),
                                                     std::end(kOrchestratePlanKinds))));
  cmd->add_option("--k-best", o->k_best,
                  "With --plan-kind fastest: how many of the best plans to time")
      ->default_val(3)
      ->check(CLI::Range(1, 20));
  cmd->add_option("--select-seconds", o->select_seconds,
                  "With --plan-kind fastest: time for the candidate plans' timed runs together "
                  "(each runs at least 3 times)")
      ->default_val(2)
      ->check(in_range(0, 3600));
  cmd->add_flag("--reselect", o->reselect,
                "With --plan-kind fastest: time the candidates again even when the choice is "
                "cached (plan-choices-cpu.json beside the profile database)");
  add_cost_options(*cmd, o->cost, true);
  cmd->add_option("--time-limit", o->time_limit, "Seconds for the BLP solver, all regions")
      ->default_val(60)
      ->check(in_range(0.001, 1e6));
  cmd->add_option("--max-kernel-size", o->max_kernel_size, "Most primitives in one kernel")
      ->default_val(10)
      ->check(CLI::Range(1, 64));
  cmd->add_option("--region-size", o->region_size, "Primitives per region before a cut")
      ->default_val(48)
      ->check(CLI::Range(1, 100000));
  cmd->add_flag("--no-softmax-alternative", o->no_softmax_alternative,
                "Do not offer the softmax-after-matmul reassociation");
  cmd->add_flag("--static-part", o->static_part,
                "For a model with data-dependent shapes (detection post-processing): "
                "orchestrate the nodes before them");
  return [o, cmd] { orchestrate_command(*o, *cmd); };
}

}  // namespace orchid::cli
