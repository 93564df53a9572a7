// Cuts one planned kernel into stages (runtime/stage.hpp) and places every tensor they
// touch (runtime/memory_plan.hpp). Walking the kernel's primitives in order: a linear
// primitive oneDNN supports takes the elementwise epilogue after it
// (runtime/epilogue_matcher.hpp); a run of memory-bound primitives becomes the longest
// fused loop that expresses it from its start; pooling and linear resizing go to oneDNN
// where it matches ONNX exactly; the rest runs on reference kernels.
#pragma once

#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "orchestrate/plan.hpp"
#include "runtime/memory_plan.hpp"
#include "runtime/plan_executor.hpp"
#include "runtime/stage.hpp"

namespace orchid {

class StageBuilder {
 public:
  // Counts what it builds into `stats`; `memory` places the tensors.
  StageBuilder(const Graph& graph, const dnnl::engine& engine, MemoryPlan& memory,
               PlanExecutorStats& stats)
      : graph_(graph), engine_(engine), memory_(memory), stats_(stats) {}

  // The stages of `kernel`, in order. Linear stages get their oneDNN primitive later
  // (build_linear_ops), once the layout of every tensor is known.
  std::vector<Stage> build(const PlannedKernel& kernel);

 private:
  struct KernelPlaces;
  Location place(KernelPlaces& places, const std::string& t);
  std::optional<std::pair<LinearStage, std::size_t>> linear_stage(const PlannedKernel& pk,
                                                                  std::size_t pos,
                                                                  KernelPlaces& places);
  // The kernel's last nodes from `from` when they only reshape `result` (Reshape, Flatten,
  // Squeeze, Unsqueeze, Identity in a chain) into a kernel output the arena stores: their
  // results in order, the last of which the linear stage then writes. Else none.
  std::vector<std::string> trailing_views(const PlannedKernel& pk, std::size_t from,
                                          const std::string& result) const;
  std::optional<LoopStage> loop_stage(const PlannedKernel& pk, std::size_t begin, std::size_t end,
                                      KernelPlaces& places);
  Stage single_node_stage(const Node& n, KernelPlaces& places);

  const Graph& graph_;
  const dnnl::engine& engine_;
  MemoryPlan& memory_;
  PlanExecutorStats& stats_;
};

// Whether `node` becomes a linear stage on oneDNN (MatMul or 2-D Conv it supports), which
// reads its weights (input 1) through build_linear_ops, packed or not.
bool runs_as_linear_stage(const Graph& graph, const Node& node);

// Points a reference stage's views at their memory once the pools are allocated (graph
// inputs are rebound per run).
void bind_views(ReferenceStage& stage, const MemoryPlan& memory);

}  // namespace orchid
