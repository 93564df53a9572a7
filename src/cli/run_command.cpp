// `orchid run MODEL`: executes the model and reports outputs and time.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <set>

#include "cli/commands.hpp"
#include "cli/config_dirs.hpp"
#include "cli/cost_options.hpp"
#include "cli/gpu_runner.hpp"
#include "cli/option_checks.hpp"
#include "cli/report_files.hpp"
#include "cost/cost_model.hpp"
#include "eval/random_inputs.hpp"
#include "eval/reference_interpreter.hpp"
#include "ir/npy.hpp"
#include "orchestrate/executable_plan.hpp"
#include "orchestrate/orchestrator.hpp"
#include "orchestrate/plan_import.hpp"
#include "passes/dynamic_rest.hpp"
#include "passes/load_model.hpp"
#include "passes/static_part.hpp"
#include "passes/widen_half_floats.hpp"
#include "profile/chrome_trace.hpp"
#include "profile/cpu_environment.hpp"
#include "profile/plan_selection.hpp"
#include "profile/plan_selection_cache.hpp"
#include "runtime/denormals.hpp"
#include "runtime/int8_linear.hpp"
#include "runtime/plan_executor.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/safe_file.hpp"
#include "util/statistics.hpp"

namespace orchid::cli {

namespace {

constexpr std::int64_t kMaxPlanBytes = std::int64_t{1} << 30;

struct RunOptions {
  ModelOptions model;
  std::vector<std::string> inputs;
  std::uint64_t seed = 0;
  std::string save_outputs;
  int repeat = 1;
  std::string device;        // "cpu": orchestrate with the cpu cost model, run the optimal plan;
                             // "opencl" / "cuda": run it as generated device code (src/codegen)
  std::string device_model;  // with opencl/cuda: the device spec to orchestrate for
  std::string plan;          // a plan JSON from `orchid orchestrate --json`
  std::string plan_kind = "fastest";  // with --device: which plan to execute ("fastest":
                                      // the k best and greedy fusion timed, see below)
  CostCliOptions cost;                // with --device: --profile, --profile-db
  DistributedRunOptions distributed;  // --mapping: run a mapping plan across MPI ranks
  int kernel_times = 0;               // with a plan: list this many slowest kernels
  int threads = 0;                    // --threads (threads_given) else the affinity mask's cores
  bool threads_given = false;
  bool reselect = false;      // --reselect: time the candidates even when a choice is cached
  int k_best = 3;             // --plan-kind fastest: ranked plans timed beside greedy
  double select_seconds = 2;  // their timed runs together
  std::string linear_backend = "generated";  // with --device cuda: generated, vendor, auto
  std::string json;                          // the report as JSON ("-": stdout, no text)
  std::string trace;                         // one timed run's kernels as a Chrome trace
  bool fp32_qdq = false;        // QDQ Conv/MatMul in fp32 after dequantization, not int8 kernels
  bool keep_denormals = false;  // compute with denormal floats (runtime/denormals.hpp)
};

constexpr const char* kRunPlanKinds[] = {"fastest", "optimal", "operator-level", "per-primitive",
                                         "greedy-fusion"};

}  // namespace

TensorMap make_feed(const Graph& g, const std::vector<std::string>& specs, std::uint64_t seed) {
  TensorMap feed = make_random_inputs(g, seed);
  std::set<std::string> given;
  for (const auto& spec : specs) {
    const std::string name = spec.substr(0, spec.find('='));
    if (!given.insert(name).second) fail("--input: '{}' is given more than once", name);
  }
  for (const auto& spec : specs) {
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
  return feed;
}

namespace {

// Per-kernel times: --repeat runs of execute_timed after the whole-model timing (the
// per-kernel clock reads are not part of it).
struct KernelTimes {
  std::vector<double> median_us;          // per kernel, plan order
  std::vector<double> median_run_us;      // the run whose total is the median, for --trace
  std::vector<std::string> names;         // "#3 Conv+Add+Relu"
  std::vector<std::string> descriptions;  // how each kernel runs
  double total_us() const {
    double t = 0;
    for (double us : median_us) t += us;
    return t;
  }
};

KernelTimes time_kernels(const std::function<std::vector<double>()>& execute_timed,
                         const std::function<std::string(std::size_t)>& describe_kernel,
                         const Graph& primitives, const Plan& plan, int repeat) {
  std::vector<std::vector<double>> runs;
  for (int r = 0; r < repeat; ++r) runs.push_back(execute_timed());
  KernelTimes out;
  const std::size_t count = runs.front().size();
  for (std::size_t k = 0; k < count; ++k) {
    std::vector<double> xs;
    for (const auto& run : runs) xs.push_back(run[k]);
    std::sort(xs.begin(), xs.end());
    out.median_us.push_back(xs[xs.size() / 2]);
    std::string ops;
    for (std::size_t n : plan.kernels.at(k).nodes) {
      ops += (ops.empty() ? "" : "+") + primitives.nodes.at(n).op_type;
    }
    out.names.push_back(fmt::format("#{} {}", k, ops));
    out.descriptions.push_back(describe_kernel(k));
  }
  std::vector<std::pair<double, std::size_t>> totals;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    double t = 0;
    for (double us : runs[r]) t += us;
    totals.emplace_back(t, r);
  }
  std::sort(totals.begin(), totals.end());
  out.median_run_us = runs[totals[totals.size() / 2].second];
  return out;
}

// The slowest `shown` kernels, as text.
std::string slowest_kernels(const KernelTimes& times, int repeat, int shown) {
  std::vector<std::pair<double, std::size_t>> order;
  for (std::size_t k = 0; k < times.median_us.size(); ++k)
    order.emplace_back(times.median_us[k], k);
  std::sort(order.begin(), order.end(), std::greater<>());
  const double total = times.total_us();
  std::string out =
      fmt::format("kernel times (median of {} run(s), sum {:.2f} ms):\n", repeat, total / 1e3);
  const std::size_t n = std::min(order.size(), static_cast<std::size_t>(shown));
  for (std::size_t i = 0; i < n; ++i) {
    const auto [us, k] = order[i];
    out += fmt::format("  #{:<4} {:9.3f} ms {:5.1f}%  {}\n", k, us / 1e3,
                       total > 0 ? 100 * us / total : 0.0, times.descriptions[k]);
  }
  return out;
}

// The candidates' measured times beside their predictions, and the one kept.
std::string describe_selection(const PlanSelection& s) {
  std::string out = fmt::format(
      "select   {} candidate plans timed end to end, {} rounds{} in {:.2f} s (median ms, "
      "predicted in brackets):",
      s.trials.size(), s.rounds, s.interleaved ? " interleaved" : "", s.seconds);
  for (std::size_t k = 0; k < s.trials.size(); ++k) {
    const PlanTrial& t = s.trials[k];
    out += fmt::format("{} {} {:.3g} ({:.3g}){}", k ? "," : "", t.kind, t.median_ms, t.predicted_ms,
                       t.cv > kNoisyTimingCv ? " noisy" : "");
  }
  return out + fmt::format(" -> {}\n", s.trials[s.fastest].kind);
}

// --plan-kind fastest: the candidate plans timed end to end (or the choice cached for the
// same key), the fastest returned; its warm executor, when timed now, in `executor`.
const Plan* select_plan(const RunOptions& options, const Graph& g, const Orchestration& o,
                        const std::vector<const Plan*>& candidates, const TensorMap& feed,
                        PackedWeights& packing, std::string& text, nlohmann::json& report,
                        std::unique_ptr<PlanExecutor>& executor) {
  PlanChoiceOptions co;
  co.packing = &packing;
  co.budget_seconds = options.select_seconds;
  co.k_best = options.k_best;
  co.costs = options.cost.profile ? "measured " + options.cost.profile_db : "analytic";
  co.reselect = options.reselect;
  PlanChoice choice = choose_fastest_plan(options.model.model, g, o.fission, candidates, feed, co);
  if (choice.reused) {
    std::string timed;
    for (const PlanTrial& t : choice.reused->trials) {
      timed += fmt::format("{}{} {:.3g}", timed.empty() ? "" : ", ", t.kind, t.median_ms);
    }
    text += fmt::format(
        "select   reused the choice cached in {}: {} (timed then, median ms: {}; "
        "--reselect times the candidates again)\n",
        choice.cache, choice.plan->kind, timed);
    report["selection"] = {{"cached", choice.cache}, {"chosen", choice.plan->kind}};
    return choice.plan;
  }
  const PlanSelection& selection = choice.selection;
  text += describe_selection(selection);
  nlohmann::json trials = nlohmann::json::array();
  for (const PlanTrial& t : selection.trials) {
    trials.push_back({{"kind", t.kind},
                      {"median_ms", t.median_ms},
                      {"predicted_ms", t.predicted_ms},
                      {"cv", t.cv}});
  }
  report["selection"] = {{"seconds", selection.seconds},
                         {"rounds", selection.rounds},
                         {"candidates", trials},
                         {"chosen", choice.plan->kind}};
  if (choice.stored) report["selection"]["stored"] = choice.cache;
  executor = std::move(choice.selection.fastest_executor);
  return choice.plan;
}

nlohmann::json stats_json(const PlanExecutorStats& s) {
  return {{"kernels",
           {{"kernels", s.kernels},
            {"onednn_primitives", s.dnnl_primitives},
            {"epilogue_primitives", s.epilogue_primitives},
            {"fused_loops", s.fused_loops},
            {"fused_loop_primitives", s.fused_loop_primitives},
            {"reference_primitives", s.reference_primitives},
            {"blocked_convolutions", s.blocked_convolutions},
            {"nhwc_handoffs", s.nhwc_handoffs},
            {"summed_residuals", s.summed_residuals}}},
          {"memory_bytes",
           {{"peak", s.peak_bytes()},
            {"arena", s.arena_bytes},
            {"scratch", s.scratch_bytes},
            {"loop_buffers", s.loop_scratch_bytes},
            {"weights", s.weight_bytes - s.released_weight_bytes},
            {"packed_weights", s.packed_weight_bytes},
            {"released_weights", s.released_weight_bytes},
            {"blocked_layouts", s.layout_bytes}}}};
}

void run(const RunOptions& options) {
  set_flush_denormals(!options.keep_denormals);
  if (!options.distributed.mapping.empty()) {
    if (!options.trace.empty()) {
      fail("--trace describes a single-process run; with --mapping use --timeline");
    }
    if (options.repeat < 1) fail("--repeat must be at least 1, got {}", options.repeat);
    DistributedRunOptions distributed = options.distributed;
    distributed.json = options.json;
    distributed.repeat = options.repeat;
    run_mapping_plan(options.model, options.inputs, options.seed, options.save_outputs,
                     distributed);
    return;
  }
  if (options.repeat < 1) fail("--repeat must be at least 1, got {}", options.repeat);
  // Default: the cores this process may use, unless OMP_NUM_THREADS says otherwise.
  const int threads = options.threads_given            ? options.threads
                      : std::getenv("OMP_NUM_THREADS") ? cpu_threads()
                                                       : available_cores();
  set_cpu_threads(threads);  // before any executor: oneDNN and fused loops size by it
  LoadedModel loaded = load_model(options.model.model, options.model.import_options());
  const Graph& model_graph = loaded.graph;
  // A detector on the CPU: the static part runs on the plan executor, the data-dependent
  // rest (NMS, TopK, If/Loop) on the reference interpreter (passes/dynamic_rest.hpp).
  std::optional<Graph> static_graph, rest_graph;
  if (options.device == "cpu" && options.plan.empty() && model_graph.first_dynamic_node()) {
    static_graph = static_part(model_graph);
    rest_graph = dynamic_rest(model_graph, *static_graph);
  }
  const Graph& g = static_graph ? *static_graph : model_graph;

  TensorMap feed = make_feed(model_graph, options.inputs, options.seed);

  const bool gpu = is_gpu_device(options.device);
  if (!options.device.empty() && options.device != "cpu" && !gpu) {
    fail("--device: 'cpu', 'opencl' or 'cuda' can execute plans, got '{}'", options.device);
  }
  if (options.device == "opencl" && options.cost.profile) {
    fail(
        "--profile times kernels on the CPU (--device cpu) or on an NVIDIA GPU (--device cuda), "
        "not through OpenCL");
  }
  if (!options.device_model.empty() && !gpu) fail("--device-model goes with --device opencl|cuda");
  if (options.linear_backend != "generated" && options.device != "cuda") {
    fail("--linear-backend goes with --device cuda (cuBLASLt/cuDNN)");
  }
  if (options.device.empty() && (options.cost.profile || !options.cost.profile_db.empty())) {
    fail("--profile and --profile-db go with --device cpu (orchestrate with measured costs)");
  }
  const bool with_plan = !options.device.empty() || !options.plan.empty();
  if (!with_plan && !options.trace.empty()) {
    fail("--trace records the plan's kernels; it goes with --device or --plan");
  }
  if (is_stdout(options.json) && is_stdout(options.trace)) {
    fail("only one of --json and --trace can be '-' (standard output)");
  }
  const bool time_each_kernel = options.kernel_times > 0 || !options.trace.empty();
  std::vector<double> times;
  TensorMap outputs;
  std::string engine = "reference interpreter";
  nlohmann::json report;
  report["model"] = options.model.model;
  std::optional<PlanExecutorStats> stats;
  std::optional<KernelTimes> kernel_times;
  std::string orchestration_report;
  std::optional<double> predicted_ms;
  std::vector<std::string> fission_notes;  // e.g. a QDQ Conv left in fp32, and why
  if (with_plan) {
    try {
      g.require_static_shapes(fmt::format("'{}': the plan executor", options.model.model));
    } catch (const UnsupportedError& e) {
      throw UnsupportedError(fmt::format("{} (orchid run without --device/--plan)", e.what()));
    }
    // f16/bf16 models run widened to f32 (passes/widen_half_floats.hpp), cast at the
    // graph boundary.
    std::optional<Graph> widened;
    if (has_half_floats(g)) widened = widen_half_floats(g);
    const Graph& plan_graph = widened ? *widened : g;
    const TensorMap plan_feed = widened ? widen_feed(feed) : feed;
    // The plan run: imported (`executable`), or one of a live orchestration's plans, which
    // stays in place so that the selection's warm executor of it can run on.
    ExecutablePlan executable;
    std::unique_ptr<Orchestration> orchestration;
    // The default command's weights, packed once for the in-context rounds, the
    // selection and the run (packed_weights.hpp); it outlives their executors.
    PackedWeights packing;
    std::unique_ptr<PlanExecutor> selected_executor;
    const Plan* plan_run = nullptr;
    FissionResult* fission_run = nullptr;
    // Once the plan's graph exists, only its values are read: the model's graphs drop
    // theirs, so originals that fission folded or transposed are not held twice (values
    // the plan's graph shares stay alive through it).
    const auto drop_model_weights = [&] {
      for (Graph* held : {&loaded.graph, static_graph ? &*static_graph : nullptr,
                          widened ? &*widened : nullptr}) {
        if (held) held->release_constants();
      }
    };
    if (!options.plan.empty()) {
      executable =
          import_plan(plan_graph, read_regular_file(options.plan, kMaxPlanBytes, "--plan file"),
                      fmt::format("--plan '{}'", options.plan));
      drop_model_weights();
      engine = fmt::format("plan executor, {} plan from {}", executable.plan.kind, options.plan);
      report["plan"] = {{"file", options.plan}, {"kind", executable.plan.kind}};
    } else {
      const std::string spec =
          gpu ? gpu_device_model(options.device, options.device_model) : std::string("cpu");
      CostCliOptions cost = options.cost;
      cost.cuda = options.device == "cuda";  // --profile times on the GPU
      const auto cost_model = make_cost_model(load_device_spec(spec, config_roots()), cost);
      const bool select = options.plan_kind == "fastest" && !gpu;
      OrchestrateOptions orchestrate_options;
      if (select) orchestrate_options.k_best = static_cast<std::size_t>(options.k_best);
      // Without VNNI most quantize_static weights (full int8 range) could saturate
      // oneDNN's int16 pair sums; fp32 after dequantization is then exact and faster
      // than the reference kernels the executor would fall back to.
      // (Generated GPU code has no int8 kernels: QDQ ops stay in fp32 there.)
      orchestrate_options.int8_linear =
          !gpu && !options.fp32_qdq && int8_kernels_without_saturation();
      if (!gpu && !options.fp32_qdq && !int8_kernels_without_saturation()) {
        fission_notes.push_back(
            "this CPU has no VNNI (oneDNN's u8*s8 kernels would sum weight pairs in int16 "
            "and could saturate): QDQ Conv/MatMul run in fp32 after dequantization");
      }
      // On this CPU, the default selection and measured costs are refined by timing the
      // plans whole (in_context_costs.hpp); an explicit analytic --plan-kind is not.
      const bool in_context =
          !gpu && (options.cost.profile || select) && options.cost.context_rounds > 0;
      InContextReport in_context_report;
      // Fission first: from then on only the primitive graph's values are read, so the
      // model's graphs drop theirs before any executor packs a copy.
      FissionResult primitives = fission(plan_graph, fission_options(orchestrate_options));
      drop_model_weights();
      // The executors drop the originals of weights they read only packed, unless
      // measured costs are asked for (their kernel timings read the plain weights).
      const bool hold_weights = !gpu && !options.cost.profile;
      orchestration = std::make_unique<Orchestration>(orchestrate_with_costs(
          std::move(primitives), *cost_model, cost, orchestrate_options, in_context,
          &in_context_report, hold_weights ? &packing : nullptr));
      Orchestration& o = *orchestration;
      if (hold_weights) packing.hold_weights_of(&o.fission.graph);
      report_measured_costs(*cost_model, cost, options.model.model);
      const double orchestrate_seconds =
          in_context ? in_context_report.seconds : o.stats.total_seconds;
      orchestration_report =
          fmt::format("orchestrate {:.2f} s ({} cost model; BLP {:.2f} s{})\n", orchestrate_seconds,
                      options.cost.profile ? "measured" : "analytic", o.stats.solve_seconds,
                      select ? fmt::format(", {} ranked plans in {:.2f} s", o.ranked.size(),
                                           o.stats.k_best_seconds)
                             : "");
      if (in_context) {
        orchestration_report +=
            fmt::format("in context  {}\n", describe_in_context(in_context_report));
        const InContextStats& c = in_context_report.costs;
        report["in_context"] = {{"rounds", in_context_report.rounds},
                                {"plans_timed", in_context_report.plans_timed},
                                {"kernels_recorded", in_context_report.kernels_recorded},
                                {"settled", in_context_report.settled},
                                {"timed_only", in_context_report.timed_only},
                                {"seconds", in_context_report.seconds},
                                {"kernels", c.kernels},
                                {"kernels_in_context", c.in_context},
                                {"scale_linear", c.scale_linear},
                                {"scale_other", c.scale_other}};
        if (!in_context_report.error.empty()) {
          report["in_context"]["error"] = in_context_report.error;
        }
      }
      report["orchestrate_seconds"] = orchestrate_seconds;
      const Plan* chosen =
          &plan_of_kind(o, options.plan_kind == "fastest" ? "optimal" : options.plan_kind);
      if (select) {
        const std::vector<const Plan*> candidates = plan_candidates(o);
        chosen = select_plan(options, plan_graph, o, candidates, plan_feed, packing,
                             orchestration_report, report, selected_executor);
      }
      plan_run = chosen;
      fission_run = &o.fission;
      const Plan& plan = *chosen;
      predicted_ms = plan.total_us / 1e3;
      engine = fmt::format("plan executor, {} plan for {} ({} kernels, {} {:.2f} ms)", plan.kind,
                           spec, plan.kernels.size(),
                           options.cost.profile ? "measured" : "predicted", plan.total_us / 1e3);
      report["plan"] = {{"kind", plan.kind},
                        {"device_model", spec},
                        {options.cost.profile ? "measured_us" : "predicted_us", plan.total_us}};
    }
    if (!plan_run) {
      plan_run = &executable.plan;
      fission_run = &executable.fission;
    }
    const Plan& plan = *plan_run;
    const Graph& primitives = fission_run->graph;
    // A weight the executor reads only packed: every graph here holding that value drops
    // it, so the model's weights are not held twice (none of them is read again).
    const auto release_weight = [&](const std::string& w) {
      const std::shared_ptr<const Tensor> value = fission_run->graph.tensor(w).data;
      for (Graph* held : {&loaded.graph, static_graph ? &*static_graph : nullptr,
                          widened ? &*widened : nullptr, &fission_run->graph}) {
        if (held && held->has_tensor(w)) held->release_constant(w, value.get());
      }
    };
    const auto& alternatives = fission_run->alternatives;
    fission_notes.insert(fission_notes.end(), fission_run->notes.begin(), fission_run->notes.end());
    report["plan"]["kernels"] = plan.kernels.size();
    report["device"] = gpu ? options.device : std::string("cpu");
    if (gpu) {
      GpuPlanRunner runner(options.device, primitives, plan, alternatives, options.linear_backend);
      runner.execute(plan_feed);  // warm-up
      for (int r = 0; r < options.repeat; ++r) times.push_back(runner.timed_run(plan_feed));
      outputs = runner.outputs();
      engine += "; " + runner.summary();
      if (time_each_kernel) {
        kernel_times = time_kernels([&] { return runner.execute_timed(plan_feed); },
                                    [&](std::size_t k) { return runner.describe_kernel(k); },
                                    primitives, plan, options.repeat);
      }
    } else {
      if (selected_executor) {
        selected_executor->release_packed_weights(release_weight);
      } else {
        PlanExecutorOptions executor_options;
        executor_options.release_weight = release_weight;
        executor_options.packing = &packing;
        selected_executor =
            std::make_unique<PlanExecutor>(primitives, plan, alternatives, executor_options);
        selected_executor->execute(plan_feed);  // warm-up
      }
      PlanExecutor& executor = *selected_executor;
      for (int r = 0; r < options.repeat; ++r) {
        const auto start = std::chrono::steady_clock::now();
        executor.execute(plan_feed);
        const auto stop = std::chrono::steady_clock::now();
        times.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
      }
      outputs = executor.outputs();
      stats = executor.stats();
      if (time_each_kernel) {
        kernel_times = time_kernels([&] { return executor.execute_timed(plan_feed); },
                                    [&](std::size_t k) { return executor.describe_kernel(k); },
                                    primitives, plan, options.repeat);
      }
    }
    if (widened) {
      outputs = narrow_outputs(g, outputs);
      engine += "; f16/bf16 computed in f32";
    }
    if (rest_graph) {
      TensorMap rest_feed = feed;
      for (const auto& [name, value] : outputs) rest_feed.insert_or_assign(name, value);
      const auto start = std::chrono::steady_clock::now();
      outputs = ReferenceInterpreter(*rest_graph).run(rest_feed);
      const double rest_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      for (double& t : times) t += rest_ms;
      engine += fmt::format(
          "; static part ({} of {} nodes) on it, the data-dependent rest ({} nodes, from {}) on "
          "the reference interpreter in {:.2f} ms",
          static_graph->nodes.size(), model_graph.nodes.size(), rest_graph->nodes.size(),
          model_graph.first_dynamic_node()->describe(), rest_ms);
    }
  } else {
    ReferenceInterpreter interpreter(g);
    for (int r = 0; r < options.repeat; ++r) {
      const auto start = std::chrono::steady_clock::now();
      outputs = interpreter.run(feed);
      const auto stop = std::chrono::steady_clock::now();
      times.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
    }
    report["device"] = "reference";
  }
  report["engine"] = engine;

  std::string text = fmt::format("model    {}  ({})\n", options.model.model, engine);
  text += fmt::format(
      "cpu      {} threads ({} cores in this process's affinity mask), oneDNN ISA {}{}; "
      "threads wait: {}\n",
      cpu_threads(), available_cores(), effective_cpu_isa(),
      std::getenv("ONEDNN_MAX_CPU_ISA")
          ? fmt::format(" (ONEDNN_MAX_CPU_ISA={})", std::getenv("ONEDNN_MAX_CPU_ISA"))
          : "",
      openmp_wait_description());
  report["cpu"] = {{"threads", cpu_threads()},
                   {"cores", available_cores()},
                   {"onednn_isa", effective_cpu_isa()},
                   {"openmp_wait", openmp_wait_description()}};
  text += orchestration_report;
  report["outputs"] = nlohmann::json::array();
  for (const auto& name : model_graph.outputs) {
    const Tensor& t = outputs.at(name);
    double sum = 0.0;
    double abs_sum = 0.0;
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      const double v = t.get_as_double(i);
      sum += v;
      abs_sum += std::fabs(v);
    }
    const double mean_abs = t.numel() ? abs_sum / static_cast<double>(t.numel()) : 0.0;
    text += fmt::format("output   {}  {} {}  sum {:.6g}  mean|x| {:.6g}\n", name,
                        dtype_name(t.dtype()), shape_to_string(t.shape()), sum, mean_abs);
    report["outputs"].push_back({{"name", name},
                                 {"dtype", dtype_name(t.dtype())},
                                 {"shape", t.shape()},
                                 {"sum", sum},
                                 {"mean_abs", mean_abs}});
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  auto pct = [&](double q) {
    return sorted[static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5)];
  };
  text += fmt::format(
      "time     {:.2f} ms median over {} run(s) (p10 {:.2f} ms, p90 {:.2f} ms, min {:.2f} ms)\n",
      sorted[sorted.size() / 2], sorted.size(), pct(0.1), pct(0.9), sorted.front());
  report["time_ms"] = {{"runs", times.size()},  {"median", sorted[sorted.size() / 2]},
                       {"p10", pct(0.1)},       {"p90", pct(0.9)},
                       {"min", sorted.front()}, {"each", times}};
  const double cv = coefficient_of_variation(times);
  if (times.size() > 1) {
    text += fmt::format("spread   coefficient of variation {:.1f}%{}\n", 100 * cv,
                        cv > kNoisyTimingCv
                            ? fmt::format(" (warning: above {:.0f}%: the machine is busy or the "
                                          "runs too short; compare with care)",
                                          100 * kNoisyTimingCv)
                            : "");
    report["time_ms"]["cv"] = cv;
  }
  if (predicted_ms) {
    const double measured = sorted[sorted.size() / 2];
    text += fmt::format(
        "plan     predicted {:.2f} ms, measured {:.2f} ms (measured/predicted {:.2f})\n",
        *predicted_ms, measured, *predicted_ms > 0 ? measured / *predicted_ms : 0.0);
    report["plan"]["predicted_ms"] = *predicted_ms;
  }
  if (stats) {
    const double mib = 1024.0 * 1024.0;
    text += fmt::format(
        "kernels  {}: {} oneDNN primitives (+{} epilogue primitives as post-ops), {} fused "
        "loops over {} primitives, {} primitives on reference kernels; {} convolutions in "
        "oneDNN's preferred layout ({} fed in it without a reorder, {} adding their residual in "
        "place)\n",
        stats->kernels, stats->dnnl_primitives, stats->epilogue_primitives, stats->fused_loops,
        stats->fused_loop_primitives, stats->reference_primitives, stats->blocked_convolutions,
        stats->nhwc_handoffs, stats->summed_residuals);
    text += fmt::format(
        "memory   peak {:.1f} MiB = arena {:.1f} + scratch {:.1f} + loop buffers {:.1f} + weights "
        "{:.1f} + packed weights {:.1f} + blocked layouts {:.1f} MiB ({:.1f} MiB of weights read "
        "only packed were dropped)\n",
        static_cast<double>(stats->peak_bytes()) / mib,
        static_cast<double>(stats->arena_bytes) / mib,
        static_cast<double>(stats->scratch_bytes) / mib,
        static_cast<double>(stats->loop_scratch_bytes) / mib,
        static_cast<double>(stats->weight_bytes - stats->released_weight_bytes) / mib,
        static_cast<double>(stats->packed_weight_bytes) / mib,
        static_cast<double>(stats->layout_bytes) / mib,
        static_cast<double>(stats->released_weight_bytes) / mib);
    report.update(stats_json(*stats));
    if (stats->int8_primitives > 0) {
      text += fmt::format("int8     {} quantized Conv/MatMul on oneDNN's int8 kernels\n",
                          stats->int8_primitives);
    }
    for (const auto& why : fission_notes) text += "note     " + why + "\n";
    for (const auto& why : stats->int8_fallbacks) text += "note     " + why + "\n";
    report["kernels"]["int8_primitives"] = stats->int8_primitives;
  }
  std::string trace;
  if (kernel_times) {
    if (options.kernel_times > 0) {
      text += slowest_kernels(*kernel_times, options.repeat, options.kernel_times);
    }
    nlohmann::json per_kernel = nlohmann::json::array();
    for (std::size_t k = 0; k < kernel_times->median_us.size(); ++k) {
      per_kernel.push_back({{"kernel", k},
                            {"name", kernel_times->names[k]},
                            {"median_us", kernel_times->median_us[k]},
                            {"runs_as", kernel_times->descriptions[k]}});
    }
    report["kernel_times"] = {{"runs", options.repeat},
                              {"sum_median_us", kernel_times->total_us()},
                              {"kernels", per_kernel}};
    if (!options.trace.empty()) {
      trace = kernel_timeline_trace(
          kernel_times->median_run_us, kernel_times->names, kernel_times->descriptions,
          {{"model", options.model.model},
           {"engine", engine},
           {"run",
            fmt::format("the median of {} timed run(s), kernels back to back", options.repeat)},
           {"time_unit", "us"}});
    }
  }

  if (!options.save_outputs.empty()) {
    save_outputs(options.save_outputs, model_graph.outputs, outputs);
    text += fmt::format("saved    {} output(s) to {}\n", model_graph.outputs.size(),
                        options.save_outputs);
    report["saved_outputs"] = options.save_outputs;
  }
  if (!is_stdout(options.json) && !is_stdout(options.trace)) fmt::print("{}", text);
  write_report_files(
      {{options.json, options.json.empty() ? "" : report.dump(2) + "\n"}, {options.trace, trace}});
  for (const std::string& file : {options.json, options.trace}) {
    if (!file.empty() && !is_stdout(file) && !is_stdout(options.json) &&
        !is_stdout(options.trace)) {
      fmt::print("wrote    {}\n", file);
    }
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
  cmd->add_option("--repeat", options->repeat, "Number of timed runs (after one warm-up)")
      ->default_val(1)
      ->check(in_range(1, 1e6));
  cmd->add_option("--device", options->device,
                  "Orchestrate for this device and execute the plan: cpu (oneDNN + fused loops), "
                  "opencl (generated kernels on the first OpenCL device) or cuda (generated "
                  "kernels on the present NVIDIA GPU, NVRTC + CUDA graph)");
  cmd->add_option("--device-model", options->device_model,
                  "With --device opencl|cuda: the device spec to orchestrate for (default: the "
                  "one matching the GPU; a100 for opencl)");
  cmd->add_option("--plan", options->plan,
                  "Execute a plan written by `orchid orchestrate --json` for this model");
  cmd->add_option("--kernel-times", options->kernel_times,
                  "With --device or --plan: list the N slowest kernels (median per kernel over "
                  "--repeat extra runs) and how each runs")
      ->check(in_range(0, 1e6));
  cmd->add_option("--plan-kind", options->plan_kind,
                  "With --device: which plan to execute: fastest (default on the CPU: the "
                  "--k-best best predicted plans and greedy fusion timed end to end, the "
                  "fastest kept), optimal, operator-level, per-primitive, greedy-fusion")
      ->default_val("fastest")
      ->check(CLI::IsMember(
          std::vector<std::string>(std::begin(kRunPlanKinds), std::end(kRunPlanKinds))));
  cmd->add_flag("--keep-denormals", options->keep_denormals,
                "On the CPU: compute with denormal floats (below 1.2e-38) instead of flushing "
                "them to zero while the plan runs; x86 cores take a slow path for each (30x "
                "slower convolutions seen)");
  cmd->add_flag("--fp32-qdq", options->fp32_qdq,
                "With --device cpu: run QDQ-quantized Conv/MatMul in fp32 after dequantization "
                "instead of on oneDNN's int8 kernels");
  cmd->add_option("--k-best", options->k_best,
                  "With --plan-kind fastest: how many of the best predicted plans to time")
      ->default_val(3)
      ->check(in_range(1, 20));
  cmd->add_flag("--reselect", options->reselect,
                "With --plan-kind fastest: time the candidate plans again even when the choice "
                "for this model, candidates, ISA and threads is cached (plan-choices-cpu.json "
                "beside the profile database)");
  cmd->add_option("--select-seconds", options->select_seconds,
                  "With --plan-kind fastest: time for the candidate plans' timed runs "
                  "together (each runs at least 3 times)")
      ->default_val(2)
      ->check(in_range(0, 3600));
  CLI::Option* threads = cmd->add_option(
      "--threads", options->threads,
      "Threads for oneDNN and the fused loops (default: the cores this process may use, or "
      "OMP_NUM_THREADS when set)");
  cmd->add_option("--linear-backend", options->linear_backend,
                  "With --device cuda: MatMul/Conv stages as generated kernels (generated), as "
                  "cuBLASLt/cuDNN calls where one computes the stage (vendor), or the faster "
                  "of the two per stage, timed on the GPU (auto)")
      ->check(CLI::IsMember({"generated", "vendor", "auto"}));
  cmd->add_option("--json", options->json,
                  "Write the report (outputs, times, kernels, memory, per-kernel times) as JSON "
                  "to FILE; '-' prints only the JSON to stdout");
  cmd->add_option("--trace", options->trace,
                  "With --device or --plan: write one timed run's kernels as a Chrome trace "
                  "(Perfetto, chrome://tracing) to FILE");
  add_cost_options(*cmd, options->cost, false);
  add_distributed_run_options(*cmd, options->distributed);
  return [options, threads] {
    options->threads_given = threads->count() > 0;
    run(*options);
  };
}

}  // namespace orchid::cli
