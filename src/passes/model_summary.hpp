// What a loaded model is, as data: inputs, outputs, node counts, parameters, FLOPs and
// the op histogram. `orchid inspect --json` prints it and the Python package's
// orchid.inspect() returns it, so both say the same thing (keys in docs/json_output.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "passes/load_model.hpp"

namespace orchid {

nlohmann::json model_summary(const LoadedModel& loaded, const std::string& model_path);

}  // namespace orchid
