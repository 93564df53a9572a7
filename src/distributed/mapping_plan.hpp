// A mapping plan as `orchid map --json` writes it, read back for execution: groups of
// devices (ranks) and, per layer, its group, sharding and predicted start/finish.
#pragma once

#include <string>
#include <vector>

#include "mapping/sharding.hpp"

namespace orchid::distributed {

struct PlanGroup {
  std::string design;
  int devices = 1;
  int first_device = 0;
};

struct PlanLayer {
  std::string name;
  int group = 0;
  mapping::Strategy sharding = mapping::Strategy::None;
  double start_s = 0, finish_s = 0;  // predicted
};

struct MappingPlan {
  std::string path;
  std::string workload;
  std::string system;
  long batch = 1;
  double latency_s = 0;  // predicted
  std::vector<PlanGroup> groups;
  std::vector<PlanLayer> layers;
  int devices() const;  // ranks the plan needs
};

// Errors name the file and the key at fault.
MappingPlan read_mapping_plan(const std::string& path);
MappingPlan parse_mapping_plan(const std::string& text, const std::string& path);

}  // namespace orchid::distributed
