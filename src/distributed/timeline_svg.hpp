// SVG Gantt chart of a distributed run next to its prediction: per rank, one row with
// the plan's predicted layer intervals (the rank's group) and one with the measured
// compute (blue), receive (orange) and send (green) intervals of the first inference.
// Both rows share one time axis, so a layer that takes longer than predicted shows.
#pragma once

#include <string>

#include "distributed/mapping_plan.hpp"
#include "distributed/plan_runner.hpp"
#include "mapping/workload.hpp"

namespace orchid::distributed {

std::string timeline_svg(const MappingPlan& plan, const DistributedRun& run,
                         const mapping::Workload& workload);

}  // namespace orchid::distributed
