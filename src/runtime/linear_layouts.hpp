// The layout of every linear stage's tensors in a compiled plan, and its oneDNN
// primitive built for that layout. The decision which tensors stay channels-last is
// cost/layout_policy's; this file tells it how the plan's stages use each tensor.
#pragma once

#include <functional>
#include <map>
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

// The tensors stored in a convolution's preferred layout, and that layout.
using KeptLayouts = std::map<std::string, dnnl::memory::desc>;

// The arena tensors the plan keeps channels-last (cost/layout_policy.hpp's rule over the
// uses of every stage, in the layout each convolution prefers: NHWC wherever oneDNN has a
// fast kernel for it, else its own blocked choice, kept only where the convolutions using it
// agree on it; fused loops take any);
// sets each linear stage's `preferred` layouts on the way.
KeptLayouts choose_channels_last(std::vector<std::vector<Stage>>& kernels, const Graph& graph,
                                 const dnnl::engine& engine, const GraphBoundaryLayouts& boundary);

// Builds every linear stage's primitive for the layout `kept` gives its tensors, and
// lays out its reordered copies in the memory plan's layout pool. Weights are packed
// through `packing`; each constant that no stage reads unpacked is passed to `release`
// (when set) once its last use is packed. Returns the constants some stage reads unpacked
// (as a source, a post-op operand, in a loop or a reference kernel, or as weights a
// primitive keeps plain).
std::vector<std::string> build_linear_ops(std::vector<std::vector<Stage>>& kernels,
                                          const Graph& graph, const dnnl::engine& engine,
                                          dnnl::stream& stream, const KeptLayouts& kept,
                                          MemoryPlan& memory, PlanExecutorStats& stats,
                                          PackedWeights& packing,
                                          const std::function<void(const std::string&)>& release);

// Builds again every pooling / resampling / concatenation primitive whose sources or
// result are kept.
void relayout_memory_bound_ops(std::vector<std::vector<Stage>>& kernels, const Graph& graph,
                               const dnnl::engine& engine, const KeptLayouts& kept);

// Compiles again every fused loop that reads or writes a kept tensor, for its layout. A loop
// that must then walk the logical order (it reduces, or computes per-row values) over large
// kept tensors reads and writes plain copies of them instead (LoopStage::plain_copies).
void relayout_loops(std::vector<std::vector<Stage>>& kernels, const Graph& graph,
                    const dnnl::engine& engine, const KeptLayouts& kept, MemoryPlan& memory,
                    PlanExecutorStats& stats);

// Points each linear stage's reordered copies at the allocated layout pool.
void bind_layout_buffers(LinearStage& stage, MemoryPlan& memory);

}  // namespace orchid
