// Questions about the flow of tensors inside one planned kernel, asked while the kernel
// is cut into stages: what a run of its primitives must hand on, and who reads a tensor.
#pragma once

#include <cstddef>
#include <set>
#include <string>

#include "ir/graph.hpp"
#include "orchestrate/plan.hpp"

namespace orchid {

// The tensors produced by kernel nodes [begin, end) that another node of the kernel or
// something outside the kernel reads.
std::set<std::string> needed_after(const Graph& graph, const PlannedKernel& kernel,
                                   std::size_t begin, std::size_t end);

// How many inputs of kernel nodes [from, end of kernel) read `t`.
std::size_t readers_from(const Graph& graph, const PlannedKernel& kernel, std::size_t from,
                         const std::string& t);

}  // namespace orchid
