#include "orchestrate/executable_plan.hpp"

#include <fmt/format.h>

#include "orchestrate/plan_import.hpp"

namespace orchid {

ExecutablePlan import_plan(const Graph& model, const std::string& text, const std::string& source) {
  ExecutablePlan out;
  out.fission = fission(model, FissionOptions{});
  out.plan = plan_from_json(text, out.fission.graph, out.fission.alternatives, source, &out.device);
  return out;
}

ExecutablePlan take_plan(Orchestration&& orchestration, const Plan& chosen) {
  ExecutablePlan out;
  out.plan = chosen;  // copied before the orchestration is moved from
  out.device = orchestration.device;
  out.fission = std::move(orchestration.fission);
  return out;
}

}  // namespace orchid
