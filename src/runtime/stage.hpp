// The stages a planned kernel is compiled into (runtime/stage_builder.hpp), one kind per
// way of computing: a linear primitive on oneDNN with its epilogue, a fused loop, a
// pooling, resampling or concatenation primitive on oneDNN, or one primitive on its reference
// kernel.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "eval/reference/reference_kernels.hpp"
#include "runtime/epilogue_matcher.hpp"
#include "runtime/fused/fused_loop.hpp"
#include "runtime/int8_linear.hpp"
#include "runtime/memory_plan.hpp"
#include "runtime/onednn_linear.hpp"
#include "runtime/onednn_memory_bound.hpp"

namespace orchid {

// A linear primitive on oneDNN, epilogue folded in as post-ops.
struct LinearStage {
  const Node* node = nullptr;
  std::vector<PostOp> post_ops;
  std::string src, wei, dst;               // the tensors read and written (as the arena names them)
  std::optional<ConvLayouts> preferred;    // conv_preferred_layouts
  LinearOp op;                             // built once every stage is known (build_linear_ops)
  std::vector<std::int64_t> copy_offsets;  // op.reordered_copies() in the layout pool
  Location a, b, y;
  std::vector<Location> extra;
  std::vector<const void*> extra_ptrs;  // reused every run
  // Reshapes after the epilogue that end the kernel: their last result is `y` itself
  // (the same bytes in another shape), so they cost nothing. Stored plain.
  std::vector<std::string> views;
  std::size_t reshapes = 0;  // Reshapes inside the epilogue (EpilogueMatch::reshapes)
};

struct LoopStage {
  std::unique_ptr<FusedLoop> loop;
  std::vector<std::size_t> nodes;  // what it computes, to compile it again for stored layouts
  std::set<std::string> needed;
  std::vector<std::string> read_names;  // tensors read (arena names)
  std::vector<Location> reads, writes;
  std::vector<const std::byte*> read_ptrs;
  std::vector<std::byte*> write_ptrs;
  // A stored (channels-last or blocked) tensor the loop reads or writes through a plain
  // copy in the layout pool, reordered by oneDNN before (a read) or after (a write) it runs
  // (relayout_loops says when).
  struct PlainCopy {
    std::size_t index = 0;  // into reads, or into writes
    bool write = false;
    dnnl::memory stored, plain;
    dnnl::reorder reorder;    // stored -> plain for a read, plain -> stored for a write
    std::int64_t offset = 0;  // of the plain copy in the layout pool
  };
  std::vector<PlainCopy> plain_copies;
};

// Pooling, resampling or concatenation on oneDNN.
struct MemoryBoundStage {
  const Node* node = nullptr;
  MemoryBoundOp op;
  std::vector<std::string> read_names;  // the first `sources` are the primitive's sources
  std::size_t sources = 1;
  bool result_any_layout = false;  // memory_bound_result_any_layout
  std::vector<Location> xs;
  std::vector<const void*> x_ptrs;  // reused every run
  Location y;
  std::string write_name;
};

// One primitive on its reference kernel, reading and writing views in place.
struct ReferenceStage {
  const Node* node = nullptr;
  ReferenceKernel kernel = nullptr;
  bool block_copies = false;  // runtime/copy_kernels.hpp's kernel instead of the reference one
  std::vector<std::string> read_names;
  std::vector<Tensor> in_views, out_views;
  std::vector<const Tensor*> ins;                     // per node input: view, constant or null
  std::vector<Location> in_locations, out_locations;  // per view
  std::vector<const Tensor*> in_constants;            // per node input
  std::vector<std::pair<std::size_t, std::size_t>> rebound;  // in_views[i] <- input k
};

// An int8 linear primitive (QLinearConv / QLinearMatMul) on oneDNN's int8 kernels.
struct Int8LinearStage {
  const Node* node = nullptr;
  Int8LinearOp op;
  std::vector<std::string> read_names;  // arena names of what it reads (x)
  std::string write_name;
  Location x, y;
};

using Stage =
    std::variant<LinearStage, LoopStage, MemoryBoundStage, ReferenceStage, Int8LinearStage>;

}  // namespace orchid
