// Deterministic random values for a graph's inputs, chosen so that every model runs
// meaningfully: floats uniform in [-1, 1); integer inputs used as Gather indices are
// valid indices for the table they index; other integer inputs (masks) are ones.
#pragma once

#include <cstdint>

#include "eval/reference_interpreter.hpp"
#include "ir/graph.hpp"

namespace orchid {

TensorMap make_random_inputs(const Graph& graph, std::uint64_t seed);

}  // namespace orchid
