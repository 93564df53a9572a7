// The chosen plan as JSON (--json): groups, designs, per-layer placement and sharding,
// per-device timelines, and the baselines' latencies.
#pragma once

#include <string>
#include <vector>

#include "mapping/baselines.hpp"
#include "mapping/evaluator.hpp"

namespace orchid::mapping {

std::string plan_to_json(const Evaluator& evaluator, const Mapping& mapping,
                         const Schedule& schedule, const std::vector<BaselineResult>& baselines,
                         double lower_bound, double search_seconds);

}  // namespace orchid::mapping
