// The layout of every linear stage's tensors in a compiled plan, and its oneDNN
// primitive built for that layout. The decision which tensors stay channels-last is
// cost/layout_policy's; this file tells it how the plan's stages use each tensor.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "runtime/memory_plan.hpp"
#include "runtime/plan_executor.hpp"
#include "runtime/stage.hpp"

namespace orchid {

// Tensors at the edge of the executed graph whose layout is fixed from outside.
struct GraphBoundaryLayouts {
  std::set<std::string> plain;         // read plain by the caller (graph outputs)
  std::set<std::string> written_nhwc;  // graph inputs a neighbour writes channels-last
  std::set<std::string> read_nhwc;     // graph outputs neighbours read channels-last
};

// The arena tensors the plan keeps channels-last (cost/layout_policy.hpp's rule over the
// uses of every stage); sets each linear stage's prefers_nhwc on the way.
std::set<std::string> choose_channels_last(std::vector<std::vector<Stage>>& kernels,
                                           const Graph& graph, const dnnl::engine& engine,
                                           const GraphBoundaryLayouts& boundary);

// Builds every linear stage's primitive for the layout `nhwc` gives its tensors, and
// lays out its reordered copies in the memory plan's layout pool.
void build_linear_ops(std::vector<std::vector<Stage>>& kernels, const Graph& graph,
                      const dnnl::engine& engine, dnnl::stream& stream,
                      const std::set<std::string>& nhwc, MemoryPlan& memory,
                      PlanExecutorStats& stats);

// Points each linear stage's reordered copies at the allocated layout pool.
void bind_layout_buffers(LinearStage& stage, MemoryPlan& memory);

}  // namespace orchid
