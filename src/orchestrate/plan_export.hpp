// Plan outputs: JSON (schema in docs/plan_format.md) and a Graphviz DOT picture of the
// plan (plan_dot.cpp): one cluster per kernel labelled with its ops, predicted time and
// ONNX origin, its primitives inside, long chains collapsed.
#pragma once

#include <string>

#include "orchestrate/orchestrator.hpp"

namespace orchid {

std::string plan_to_json(const Orchestration& orchestration, const Plan& plan,
                         const std::string& model_path);
// `collapse_at`: a chain of at least this many primitives inside a kernel is one box; as
// many kernels in a row (each the only reader of the one before) are one box; a block of
// at least this many kernels repeated 3+ times in a row is drawn once, the repeats one box.
std::string plan_to_dot(const Orchestration& orchestration, const Plan& plan,
                        std::size_t collapse_at = 4);

}  // namespace orchid
