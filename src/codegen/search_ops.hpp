// Ops whose output element depends on a data-dependent search along an axis: TopK,
// ScatterND and ScatterElements. Like CumSum they are computed inline, one output element
// per thread, by a loop over the searched axis (or the update tuples), so each element
// reproduces the reference interpreter's sequential order exactly: TopK's ties and NaNs,
// the last update winning among duplicate scatter indices, and the order in which
// ScatterElements' add/mul reductions combine. Correct rather than fast: TopK costs
// O(k * n) per output element, a scatter O(updates along the axis) per element.
#pragma once

#include <string>

#include "codegen/kernel_writer.hpp"

namespace orchid::codegen {

bool is_search_op(const std::string& op_type);

// Output `t` of `node` (one of the ops above) at `c`, coordinates of t's shape; returns
// the variable holding it.
std::string search_value(KernelWriter& w, const Node& node, const std::string& t, const Coords& c);

}  // namespace orchid::codegen
