// A plan ready for an executor together with the primitive graph it indexes into: either
// read from a plan JSON (`orchid run --plan`, the Python package's plan=) against a fresh
// fission of the model, or taken from an orchestration.
#pragma once

#include <string>

#include "fission/fission.hpp"
#include "orchestrate/orchestrator.hpp"
#include "orchestrate/plan.hpp"

namespace orchid {

struct ExecutablePlan {
  FissionResult fission;
  Plan plan;
  std::string device;  // what the plan was made for, as the orchestration describes it
};

// `text` is a plan JSON written for `model` (docs/plan_format.md); `source` names it in
// errors. Fails unless the model has static shapes and the plan fits its primitive graph.
ExecutablePlan import_plan(const Graph& model, const std::string& text, const std::string& source);

// `chosen` (one of the orchestration's plans) with the orchestration's primitive graph,
// which the orchestration gives up.
ExecutablePlan take_plan(Orchestration&& orchestration, const Plan& chosen);

}  // namespace orchid
