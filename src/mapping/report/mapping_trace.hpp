// A mapped inference as a Chrome trace (Perfetto, chrome://tracing): one track per device
// with its compute, communication and weight streaming, and one track per pair of groups
// (and the host) with the activations sent between them, in microseconds.
#pragma once

#include <string>

#include "mapping/evaluator.hpp"

namespace orchid::mapping {

std::string mapping_trace(const Evaluator& evaluator, const Mapping& mapping,
                          const Schedule& schedule);

}  // namespace orchid::mapping
