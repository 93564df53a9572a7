// Plan outputs: JSON (schema in docs/plan_format.md) and a Graphviz DOT rendering of the
// primitive graph with one colour per kernel.
#pragma once

#include <string>

#include "orchestrate/orchestrator.hpp"

namespace orchid {

std::string plan_to_json(const Orchestration& orchestration, const Plan& plan,
                         const std::string& model_path);
std::string plan_to_dot(const Orchestration& orchestration, const Plan& plan);

}  // namespace orchid
