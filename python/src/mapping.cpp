// orchid.map(): the `orchid map` job (mapping/mapping_run.hpp) with the GIL released.
#include <memory>

#include <fmt/format.h>
#include <pybind11/stl.h>

#include "bindings.hpp"

#include "mapping/mapping_run.hpp"
#include "mapping/report/gantt_svg.hpp"
#include "mapping/report/mapping_trace.hpp"
#include "util/error.hpp"

namespace orchid::python {

namespace {

using mapping::MappingRequest;
using mapping::MappingRun;

std::unique_ptr<MappingRun> map_workload(const std::string& workload, const std::string& system,
                                         const std::string& system_text, std::int64_t batch,
                                         std::uint64_t seed, int generations, int population,
                                         int threads, double time_limit, bool gpu_roofline,
                                         const std::vector<std::string>& config_dirs) {
  if (batch < 1) fail("batch must be at least 1, got {}", batch);
  if (generations < 1) fail("generations must be at least 1, got {}", generations);
  if (population < 2) fail("population must be at least 2, got {}", population);
  if (threads < 0) fail("threads must be 0 (all cores) or more, got {}", threads);
  if (!(time_limit > 0)) fail("time_limit must be positive, got {}", time_limit);
  MappingRequest request;
  request.workload = workload;
  request.system = system;
  request.system_text = system_text;
  request.batch = batch;
  request.search.seed = seed;
  request.search.generations = generations;
  request.search.population = population;
  request.search.threads = threads;
  request.search.time_limit_s = time_limit;
  request.gpu_roofline = gpu_roofline;
  py::gil_scoped_release release;
  auto run = std::make_unique<MappingRun>(request, config_roots(config_dirs));
  run->search();
  return run;
}

py::list baselines(const MappingRun& run) {
  py::list out;
  for (const auto& b : run.baselines()) {
    py::dict d;
    d["name"] = b.name;
    d["available"] = b.available;
    d["latency_ms"] = b.available ? py::cast(b.latency * 1e3) : py::none();
    d["note"] = b.note;
    out.append(d);
  }
  return out;
}

py::list placement(const MappingRun& run) {
  const auto& m = run.result().mapping;
  const auto& s = run.schedule();
  const auto& w = run.workload();
  py::list out;
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    const auto& group = m.groups.at(m.group_of[l]);
    py::dict d;
    d["layer"] = w.layers[l].name;
    d["group"] = m.group_of[l];
    d["design"] = run.system().designs.at(group.design).id;
    d["devices"] = py::make_tuple(group.first_device, group.first_device + group.size - 1);
    d["strategy"] = mapping::strategy_name(s.strategy[l]);
    d["start_ms"] = s.start[l] * 1e3;
    d["finish_ms"] = s.finish[l] * 1e3;
    out.append(d);
  }
  return out;
}

}  // namespace

void bind_mapping(py::module_& m) {
  py::class_<MappingRun>(m, "MappingRun")
      .def_property_readonly("latency_ms",
                             [](const MappingRun& r) { return r.schedule().makespan * 1e3; })
      .def_property_readonly("feasible", [](const MappingRun& r) { return r.schedule().feasible; })
      .def_property_readonly("lower_bound_ms",
                             [](const MappingRun& r) { return r.lower_bound() * 1e3; })
      .def_property_readonly("search_seconds",
                             [](const MappingRun& r) { return r.result().seconds; })
      .def("baselines", &baselines)
      .def("placement", &placement)
      .def("to_json", &MappingRun::to_json)
      .def("to_trace",
           [](const MappingRun& r) {
             return mapping::mapping_trace(r.evaluator(), r.result().mapping, r.schedule());
           })
      .def("to_gantt_svg", [](const MappingRun& r) {
        return mapping::gantt_svg(r.evaluator(), r.result().mapping, r.schedule());
      });
  m.def("map", &map_workload, py::arg("workload"), py::arg("system"), py::arg("system_text"),
        py::arg("batch"), py::arg("seed"), py::arg("generations"), py::arg("population"),
        py::arg("threads"), py::arg("time_limit"), py::arg("gpu_roofline"), py::arg("config_dirs"));
}

}  // namespace orchid::python
