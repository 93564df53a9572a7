#include "orchestrate/plan_export.hpp"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "fission/primitive.hpp"

namespace orchid {

std::string plan_to_json(const Orchestration& o, const Plan& plan, const std::string& model_path) {
  using nlohmann::json;
  const Graph& g = o.fission.graph;
  json j;
  j["format"] = "orchid-plan";
  j["version"] = 1;
  j["model"] = model_path;
  j["device"] = o.device;
  j["kind"] = plan.kind;
  j["predicted_latency_us"] = plan.total_us;
  j["arena_bytes"] = plan.arena_bytes;
  j["weight_bytes"] = plan.weight_bytes;
  json prims = json::array();
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    auto origin = o.fission.origin.find(n.name);
    prims.push_back({{"index", i},
                     {"name", n.name},
                     {"op_type", n.op_type},
                     {"class", std::string(primitive_class_name(primitive_class(n)))},
                     {"inputs", n.inputs},
                     {"outputs", n.outputs},
                     {"origin", origin == o.fission.origin.end() ? "" : origin->second}});
  }
  j["primitives"] = prims;
  json kernels = json::array();
  for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
    const PlannedKernel& pk = plan.kernels[k];
    kernels.push_back({{"id", k},
                       {"primitives", pk.nodes},
                       {"inputs", pk.inputs},
                       {"sources", pk.sources},
                       {"outputs", pk.outputs},
                       {"cost_us", pk.cost_us}});
  }
  j["kernels"] = kernels;
  json arena = json::array();
  for (const auto& s : plan.arena) {
    arena.push_back({{"tensor", s.tensor},
                     {"offset", s.offset},
                     {"bytes", s.bytes},
                     {"first_kernel", s.first_kernel},
                     {"last_kernel", s.last_kernel}});
  }
  j["arena"] = arena;
  j["baselines_us"] = {{"operator-level", o.operator_level.total_us},
                       {"per-primitive", o.per_primitive.total_us},
                       {"greedy-fusion", o.greedy.total_us}};
  const OrchestrationStats& s = o.stats;
  j["search"] = {{"primitives", s.primitives},       {"regions", s.regions},
                 {"candidates", s.candidates},       {"blp_objective_us", s.blp_objective_us},
                 {"blp_bound_us", s.blp_bound_us},   {"blp_gap", s.blp_gap},
                 {"blp_nodes", s.blp_nodes},         {"proven_optimal", s.proven_optimal},
                 {"solve_seconds", s.solve_seconds}, {"total_seconds", s.total_seconds}};
  return j.dump(1) + "\n";
}

}  // namespace orchid
