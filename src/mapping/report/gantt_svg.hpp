// SVG Gantt chart of a mapping's predicted schedule: one row per device (its group and
// design), bars labelled with layer names (compute, communication inside the group,
// weights streamed from the host), arrows for activations sent between groups.
#pragma once

#include <string>

#include "mapping/evaluator.hpp"

namespace orchid::mapping {

std::string gantt_svg(const Evaluator& evaluator, const Mapping& mapping, const Schedule& schedule);

}  // namespace orchid::mapping
