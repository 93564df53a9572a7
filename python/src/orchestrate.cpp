// orchid.inspect() and orchid.orchestrate(): the same library calls as `orchid inspect
// --json` and `orchid orchestrate`, returning JSON text the Python side parses.
#include <memory>

#include <fmt/format.h>
#include <pybind11/stl.h>

#include "bindings.hpp"

#include "cost/cost_model.hpp"
#include "cost/device_spec.hpp"
#include "orchestrate/executable_plan.hpp"
#include "orchestrate/orchestrator.hpp"
#include "orchestrate/plan_export.hpp"
#include "passes/load_model.hpp"
#include "passes/model_summary.hpp"
#include "util/error.hpp"

namespace orchid::python {

namespace {

using Dims = std::map<std::string, std::int64_t>;
using Shapes = std::map<std::string, std::vector<std::int64_t>>;

std::string inspect(const std::string& model, const Dims& dims, const Shapes& shapes) {
  py::gil_scoped_release release;
  const LoadedModel loaded = load_model(model, import_options(dims, shapes));
  return model_summary(loaded, model).dump();
}

// An orchestration kept whole, so the DOT and JSON of any of its plans can be written.
class NativeOrchestration {
 public:
  NativeOrchestration(Orchestration o, std::string model)
      : orchestration_(std::move(o)), model_(std::move(model)) {}
  std::string to_json() const {
    return plan_to_json(orchestration_, orchestration_.optimal, model_);
  }
  std::string to_dot() const { return plan_to_dot(orchestration_, orchestration_.optimal); }

 private:
  Orchestration orchestration_;
  std::string model_;
};

std::unique_ptr<NativeOrchestration> orchestrate_model(
    const std::string& model, const std::string& device, double time_limit,
    std::size_t max_kernel_size, std::size_t region_size, bool softmax_alternative,
    const Dims& dims, const Shapes& shapes, const std::vector<std::string>& config_dirs) {
  if (!(time_limit > 0)) fail("time_limit must be positive, got {}", time_limit);
  if (max_kernel_size < 1 || max_kernel_size > 64) {
    fail("max_kernel_size must be in 1..64, got {}", max_kernel_size);
  }
  if (region_size < 1) fail("region_size must be at least 1, got {}", region_size);
  py::gil_scoped_release release;
  const LoadedModel loaded = load_model(model, import_options(dims, shapes));
  loaded.graph.require_static_shapes(fmt::format("'{}': kernel orchestration", model));
  const auto cost_model =
      make_analytic_cost_model(load_device_spec(device, config_roots(config_dirs)));
  OrchestrateOptions options;
  options.time_limit_s = time_limit;
  options.rules.max_nodes = max_kernel_size;
  options.region_target_size = region_size;
  options.softmax_matmul_alternative = softmax_alternative;
  return std::make_unique<NativeOrchestration>(orchestrate(loaded.graph, *cost_model, options),
                                               model);
}

// The DOT of a plan read from JSON: imported against a fresh fission of its model.
std::string plan_dot(const std::string& model, const std::string& plan_json, const Dims& dims,
                     const Shapes& shapes) {
  py::gil_scoped_release release;
  const LoadedModel loaded = load_model(model, import_options(dims, shapes));
  ExecutablePlan imported = import_plan(loaded.graph, plan_json, "the plan");
  Orchestration o;
  o.fission = std::move(imported.fission);
  o.optimal = std::move(imported.plan);
  o.device = std::move(imported.device);
  return plan_to_dot(o, o.optimal);
}

}  // namespace

void bind_orchestrate(py::module_& m) {
  m.def("inspect", &inspect, py::arg("model"), py::arg("dims"), py::arg("shapes"));
  py::class_<NativeOrchestration>(m, "Orchestration")
      .def("to_json", &NativeOrchestration::to_json)
      .def("to_dot", &NativeOrchestration::to_dot);
  m.def("orchestrate", &orchestrate_model, py::arg("model"), py::arg("device"),
        py::arg("time_limit"), py::arg("max_kernel_size"), py::arg("region_size"),
        py::arg("softmax_alternative"), py::arg("dims"), py::arg("shapes"), py::arg("config_dirs"));
  m.def("plan_dot", &plan_dot, py::arg("model"), py::arg("plan_json"), py::arg("dims"),
        py::arg("shapes"));
}

}  // namespace orchid::python
