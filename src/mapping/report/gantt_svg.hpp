// SVG Gantt chart of a schedule: one row per device, compute, communication and weight
// streaming in different colours, layer names as tooltips.
#pragma once

#include <string>

#include "mapping/evaluator.hpp"

namespace orchid::mapping {

std::string gantt_svg(const Evaluator& evaluator, const Mapping& mapping, const Schedule& schedule);

}  // namespace orchid::mapping
