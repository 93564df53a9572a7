// Reading a plan JSON (written by plan_to_json) back for execution, and checking any plan
// against the primitive graph it claims to run, so a hand-edited or hostile plan is one
// clear error instead of an out-of-bounds write or garbage output.
#pragma once

#include <map>
#include <string>

#include "ir/graph.hpp"
#include "orchestrate/plan.hpp"

namespace orchid {

// Parses `text` (the plan file's content; `source` names it in errors) against a fresh
// fission of the model (`primitives`, deterministic): primitive names must match one for
// one, every field must have its type, and the result passes validate_plan. The device
// the plan was made for goes to `device` when given (empty if the plan names none).
Plan plan_from_json(const std::string& text, const Graph& primitives,
                    const std::map<std::string, std::string>& alternatives,
                    const std::string& source, std::string* device = nullptr);

// Fails unless: each kernel names existing primitives (sorted, once) and its inputs and
// outputs are those of that node set; every kernel reads only graph inputs, constants or
// tensors an earlier kernel wrote (so the order is topological); every graph output is
// produced; every written tensor has one arena slot at least its size, inside the arena
// without overflow; and slots that are live at the same time do not overlap.
void validate_plan(const Plan& plan, const Graph& primitives,
                   const std::map<std::string, std::string>& alternatives,
                   const std::string& source);

}  // namespace orchid
