// JSON rendering of a mapping plan.
#include "mapping/plan_json.hpp"

#include <nlohmann/json.hpp>

namespace orchid::mapping {

std::string plan_to_json(const Evaluator& ev, const Mapping& m, const Schedule& s,
                         const std::vector<BaselineResult>& baselines, double lower_bound,
                         double search_seconds) {
  using nlohmann::json;
  const System& sys = ev.system();
  const Workload& w = ev.workload();
  json j;
  j["format"] = "orchid-mapping";  // docs/mapping_format.md
  j["version"] = 1;
  j["workload"] = w.name;
  j["batch"] = w.batch;
  j["system"] = sys.name;
  j["latency_s"] = s.makespan;
  j["feasible"] = s.feasible;
  if (!s.feasible) j["problem"] = s.problem;
  j["lower_bound_s"] = lower_bound;
  j["search_s"] = search_seconds;
  j["groups"] = json::array();
  for (const Group& g : m.groups) {
    j["groups"].push_back({{"design", sys.designs[g.design].id},
                           {"devices", g.size},
                           {"first_device", g.first_device}});
  }
  j["layers"] = json::array();
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    j["layers"].push_back({{"name", w.layers[l].name},
                           {"kind", std::string(kind_name(w.layers[l].kind))},
                           {"group", m.group_of[l]},
                           {"sharding", strategy_name(s.strategy[l])},
                           {"weights_resident", static_cast<bool>(s.resident[l])},
                           {"start_s", s.start[l]},
                           {"finish_s", s.finish[l]}});
  }
  j["devices"] = json::array();
  for (const auto& tl : s.devices) {
    json dev = json::array();
    for (const Interval& iv : tl) {
      const char* kind = iv.kind == Interval::Kind::Compute ? "compute"
                         : iv.kind == Interval::Kind::Comm  ? "comm"
                                                            : "weights";
      dev.push_back({{"layer", w.layers[iv.layer].name},
                     {"kind", kind},
                     {"start_s", iv.start},
                     {"end_s", iv.end}});
    }
    j["devices"].push_back(dev);
  }
  j["transfers"] = json::array();
  for (const Transfer& t : s.transfers) {
    j["transfers"].push_back({{"from_layer", w.layers[t.from_layer].name},
                              {"to_layer", w.layers[t.to_layer].name},
                              {"from_group", t.from_group},
                              {"to_group", t.to_group},
                              {"bytes", t.bytes},
                              {"start_s", t.start},
                              {"end_s", t.end}});
  }
  j["baselines"] = json::array();
  for (const BaselineResult& b : baselines) {
    json e = {{"name", b.name}, {"available", b.available}, {"note", b.note}};
    if (b.available) e["latency_s"] = b.latency;
    j["baselines"].push_back(e);
  }
  return j.dump(2) + "\n";
}

}  // namespace orchid::mapping
