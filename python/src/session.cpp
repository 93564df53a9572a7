// orchid.InferenceSession's engine: a model loaded once, then either the reference
// interpreter or the CPU plan executor over a plan JSON (the same path as
// `orchid run --plan`), run with numpy arrays in and out and the GIL released.
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include <omp.h>

#include <fmt/format.h>
#include <pybind11/stl.h>

#include "bindings.hpp"

#include "cost/cost_model.hpp"
#include "cost/device_spec.hpp"
#include "eval/random_inputs.hpp"
#include "orchestrate/executable_plan.hpp"
#include "orchestrate/orchestrator.hpp"
#include "orchestrate/plan_export.hpp"
#include "passes/load_model.hpp"
#include "passes/widen_half_floats.hpp"
#include "profile/cpu_environment.hpp"
#include "profile/in_context_costs.hpp"
#include "profile/plan_selection.hpp"
#include "profile/plan_selection_cache.hpp"
#include "runtime/denormals.hpp"
#include "runtime/int8_linear.hpp"
#include "runtime/plan_executor.hpp"
#include "util/error.hpp"

namespace orchid::python {

namespace {

py::tuple describe(const Graph& g, const std::string& name) {
  const TensorInfo& info = g.tensor(name);
  if (info.dynamic) return py::make_tuple(name, py::none(), py::none());
  return py::make_tuple(name, py::tuple(py::cast(info.shape)), numpy_dtype_name(info.dtype));
}

class Session {
 public:
  Session(const std::string& model, const std::string& engine,
          const std::optional<std::string>& plan_json,
          const std::map<std::string, std::int64_t>& dims,
          const std::map<std::string, std::vector<std::int64_t>>& shapes, int threads,
          const std::vector<std::string>& config_dirs, bool keep_denormals)
      : model_(model), threads_(threads > 0 ? threads : available_cores()) {
    if (threads < 0) fail("threads must be positive, got {}", threads);
    py::gil_scoped_release release;
    // Read when an executor is built (runtime/denormals.hpp): this session's choice, the
    // process's default again afterwards.
    struct DenormalChoice {
      bool before = flush_denormals();
      ~DenormalChoice() { set_flush_denormals(before); }
    } restore;
    set_flush_denormals(!keep_denormals);
    omp_set_num_threads(threads_);  // the executor's threads are set up with it
    loaded_ = load_model(model, import_options(dims, shapes));
    const Graph& g = loaded_.graph;
    // Plans run f16/bf16 models widened to f32, as `orchid run` does
    // (passes/widen_half_floats.hpp); run() casts at the boundary.
    if (engine != "reference" && has_half_floats(g)) widened_ = widen_half_floats(g);
    if (engine == "plan") {
      if (!plan_json) internal_error("Session: the plan engine needs a plan");
      g.require_static_shapes(fmt::format("'{}': the plan executor", model));
      plan_ = std::make_unique<ExecutablePlan>(
          import_plan(plan_graph(), *plan_json, fmt::format("the plan for '{}'", model)));
      executor_ = std::make_unique<PlanExecutor>(plan_->fission.graph, plan_->plan,
                                                 plan_->fission.alternatives);
      plan_json_ = plan_json;
    } else if (engine == "fastest") {
      choose_plan(config_dirs);
    } else if (engine == "reference") {
      interpreter_ = std::make_unique<ReferenceInterpreter>(g);
    } else {
      internal_error("Session: unknown engine '{}'", engine);
    }
  }

  // The plan the executor runs, as plan JSON (None for the reference interpreter).
  std::optional<std::string> plan_json() const { return plan_json_; }

  py::list inputs() const {
    py::list out;
    for (const auto& name : loaded_.graph.inputs) out.append(describe(loaded_.graph, name));
    return out;
  }
  py::list outputs() const {
    py::list out;
    for (const auto& name : loaded_.graph.outputs) out.append(describe(loaded_.graph, name));
    return out;
  }

  py::list run(const std::optional<std::vector<std::string>>& output_names, const py::dict& feed) {
    const Graph& g = loaded_.graph;
    const std::vector<std::string> wanted = output_names ? *output_names : g.outputs;
    for (const auto& name : wanted) {
      if (std::find(g.outputs.begin(), g.outputs.end(), name) == g.outputs.end()) {
        fail("run: the model has no output named '{}' (its outputs: {})", name,
             fmt::join(g.outputs, ", "));
      }
    }
    TensorMap inputs;
    for (const auto& [key, value] : feed) {
      const std::string name = py::str(key);
      if (std::find(g.inputs.begin(), g.inputs.end(), name) == g.inputs.end()) {
        fail("run: the model has no input named '{}' (its inputs: {})", name,
             fmt::join(g.inputs, ", "));
      }
      Tensor t = tensor_from_array(value, fmt::format("input '{}'", name));
      const TensorInfo& info = g.tensor(name);
      if (t.dtype() != info.dtype) {
        fail("run: input '{}' has dtype {}, the model expects {}", name,
             numpy_dtype_name(t.dtype()), numpy_dtype_name(info.dtype));
      }
      if (t.shape() != info.shape) {
        fail("run: input '{}' has shape {}, the model expects {}", name, shape_to_string(t.shape()),
             shape_to_string(info.shape));
      }
      inputs[name] = std::move(t);
    }
    for (const auto& name : g.inputs) {
      if (!inputs.count(name)) fail("run: input '{}' is missing", name);
    }
    TensorMap results;
    {
      py::gil_scoped_release release;
      // One run at a time per session: the executor's arena is shared state.
      std::lock_guard<std::mutex> lock(mutex_);
      omp_set_num_threads(threads_);  // per session: another may have set fewer
      if (!executor_) {
        results = interpreter_->run(inputs);
      } else if (widened_) {
        results = narrow_outputs(g, executor_->run(widen_feed(inputs)));
      } else {
        results = executor_->run(inputs);
      }
    }
    py::list out;
    for (const auto& name : wanted) out.append(array_from_tensor(results.at(name)));
    return out;
  }

 private:
  // What `orchid run --device cpu` does by default: orchestrate for the CPU cost model,
  // refined by in-context kernel times, keeping the 3 best plans, time them and greedy
  // fusion end to end (or reuse the choice cached for this model and machine), and run
  // the fastest on its warm executor.
  void choose_plan(const std::vector<std::string>& config_dirs) {
    loaded_.graph.require_static_shapes(fmt::format("'{}': the plan executor", model_));
    const Graph& g = plan_graph();
    const auto cost_model =
        make_analytic_cost_model(load_device_spec("cpu", config_roots(config_dirs)));
    OrchestrateOptions options;
    options.k_best = 3;
    options.int8_linear = int8_kernels_without_saturation();
    // Kept whole: the selection's warm executor reads its primitive graph and plans.
    // Refined by timing plans whole, on the session's threads (in_context_costs.hpp).
    omp_set_num_threads(threads_);
    const InContextCostModel refined(*cost_model, "cpu", in_context_db_path(""));
    // As the CLI does: once the primitive graph exists, only its values are read, and
    // every executor shares one packing that drops each original once it is packed
    // (packed_weights.hpp): the session holds each weight once.
    FissionResult primitives = fission(g, fission_options(options));
    const TensorMap selection_feed = make_random_inputs(g, 1);
    drop_model_weights();
    InContextOptions in_context;
    in_context.packing = &packing_;
    orchestration_ = std::make_unique<Orchestration>(
        orchestrate_in_context(std::move(primitives), refined, options, in_context));
    Orchestration& o = *orchestration_;
    packing_.hold_weights_of(&o.fission.graph);
    PlanChoiceOptions co;
    co.k_best = static_cast<int>(options.k_best);
    co.packing = &packing_;
    PlanChoice choice =
        choose_fastest_plan(model_, g, o.fission, plan_candidates(o), selection_feed, co);
    plan_json_ = plan_to_json(o, *choice.plan, model_);
    executor_ = std::move(choice.selection.fastest_executor);  // none when the choice was cached
    if (!executor_) {
      PlanExecutorOptions shared;
      shared.packing = &packing_;
      executor_ = std::make_unique<PlanExecutor>(o.fission.graph, *choice.plan,
                                                 o.fission.alternatives, shared);
    }
  }

  void drop_model_weights() {
    for (Graph* held : {&loaded_.graph, widened_ ? &*widened_ : nullptr}) {
      if (held) held->release_constants();
    }
  }

  const Graph& plan_graph() const { return widened_ ? *widened_ : loaded_.graph; }

  std::string model_;
  int threads_ = 0;  // OpenMP threads for its runs (default: the cores it may use)
  LoadedModel loaded_;
  std::optional<Graph> widened_;                  // the f32 graph plans run, for f16/bf16 models
  std::unique_ptr<ExecutablePlan> plan_;          // before the executor, which reads it
  std::unique_ptr<Orchestration> orchestration_;  // likewise (the chosen plan's source)
  PackedWeights packing_;  // holds the orchestration's weights; outlives the executor
  std::unique_ptr<PlanExecutor> executor_;
  std::unique_ptr<ReferenceInterpreter> interpreter_;
  std::optional<std::string> plan_json_;
  std::mutex mutex_;
};

}  // namespace

void bind_session(py::module_& m) {
  py::class_<Session>(m, "Session")
      .def(py::init<const std::string&, const std::string&, const std::optional<std::string>&,
                    const std::map<std::string, std::int64_t>&,
                    const std::map<std::string, std::vector<std::int64_t>>&, int,
                    const std::vector<std::string>&, bool>(),
           py::arg("model"), py::arg("engine"), py::arg("plan_json"), py::arg("dims"),
           py::arg("shapes"), py::arg("threads"), py::arg("config_dirs"), py::arg("keep_denormals"))
      .def("plan_json", &Session::plan_json)
      .def("inputs", &Session::inputs)
      .def("outputs", &Session::outputs)
      .def("run", &Session::run, py::arg("output_names"), py::arg("feed"));
}

}  // namespace orchid::python
