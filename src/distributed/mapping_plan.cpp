#include "distributed/mapping_plan.hpp"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "util/error.hpp"

namespace orchid::distributed {

int MappingPlan::devices() const {
  int n = 0;
  for (const PlanGroup& g : groups) n = std::max(n, g.first_device + g.devices);
  return n;
}

namespace {

template <typename T>
T get(const nlohmann::json& j, const char* key, const std::string& path, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) fail("{}: {}: missing key '{}'", path, where, key);
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    fail("{}: {}: key '{}' has the wrong type", path, where, key);
  }
}

mapping::Strategy strategy_of(const std::string& name, const std::string& path,
                              const std::string& where) {
  for (int s = 0; s < mapping::kStrategies; ++s) {
    if (name == mapping::strategy_name(static_cast<mapping::Strategy>(s))) {
      return static_cast<mapping::Strategy>(s);
    }
  }
  fail("{}: {}: key 'sharding': unknown strategy '{}'", path, where, name);
}

}  // namespace

MappingPlan parse_mapping_plan(const std::string& text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON: {}", path, e.what());
  }
  MappingPlan p;
  p.path = path;
  p.workload = get<std::string>(j, "workload", path, "top level");
  p.system = get<std::string>(j, "system", path, "top level");
  p.batch = get<long>(j, "batch", path, "top level");
  p.latency_s = get<double>(j, "latency_s", path, "top level");
  const auto groups = get<nlohmann::json>(j, "groups", path, "top level");
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const std::string where = "groups[" + std::to_string(i) + "]";
    PlanGroup g{get<std::string>(groups[i], "design", path, where),
                get<int>(groups[i], "devices", path, where),
                get<int>(groups[i], "first_device", path, where)};
    if (g.devices < 1 || g.first_device < 0) fail("{}: {}: bad device range", path, where);
    p.groups.push_back(g);
  }
  const auto layers = get<nlohmann::json>(j, "layers", path, "top level");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const std::string where = "layers[" + std::to_string(i) + "]";
    PlanLayer l;
    l.name = get<std::string>(layers[i], "name", path, where);
    l.group = get<int>(layers[i], "group", path, where);
    if (l.group < 0 || l.group >= static_cast<int>(p.groups.size())) {
      fail("{}: {}: key 'group': {} is not a group of the plan", path, where, l.group);
    }
    l.sharding = strategy_of(get<std::string>(layers[i], "sharding", path, where), path, where);
    l.start_s = get<double>(layers[i], "start_s", path, where);
    l.finish_s = get<double>(layers[i], "finish_s", path, where);
    p.layers.push_back(l);
  }
  if (p.groups.empty() || p.layers.empty()) fail("{}: the plan has no groups or no layers", path);
  return p;
}

MappingPlan read_mapping_plan(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("--mapping: cannot open '{}'", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_mapping_plan(ss.str(), path);
}

}  // namespace orchid::distributed
