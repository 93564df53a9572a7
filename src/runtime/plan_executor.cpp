#include "runtime/plan_executor.hpp"

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <variant>

#include "runtime/denormals.hpp"
#include "runtime/in_place_residuals.hpp"
#include "runtime/linear_layouts.hpp"
#include "runtime/memory_plan.hpp"
#include "runtime/stage.hpp"
#include "runtime/stage_builder.hpp"
#include "util/error.hpp"
#include "util/overloaded.hpp"

namespace orchid {

namespace {

// The layouts fixed at the executed graph's edge: its outputs (and the tensors that stand
// in for them) are read plain by the caller, unless the options say the kernel's
// neighbours in a model use them channels-last.
GraphBoundaryLayouts boundary_layouts(const Graph& g,
                                      const std::map<std::string, std::string>& alternatives,
                                      const PlanExecutorOptions& options) {
  GraphBoundaryLayouts b;
  b.plain.insert(g.outputs.begin(), g.outputs.end());
  for (const auto& [alt, main] : alternatives) {
    if (b.plain.count(main)) b.plain.insert(alt);
  }
  for (const auto& t : options.boundary_nhwc) {
    if (b.plain.erase(t)) b.read_nhwc.insert(t);
  }
  for (const auto& t : g.inputs) {
    if (options.boundary_nhwc.count(t)) b.written_nhwc.insert(t);
  }
  return b;
}

// Compiling fused loops builds index tables of up to a tensor's size and frees them;
// glibc keeps freed heap pages mapped unless asked (Candy: 408 MB resident for a 76 MB
// executor, 132 MB after this).
void return_freed_heap() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

}  // namespace

struct PlanExecutor::Impl {
  // Set when built while flush_denormals(): its runs flush denormals (denormals.hpp).
  std::optional<DenormalsFlushedOnWorkers> workers_flushed;
  const Graph& graph;
  const Plan& plan;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::shared_ptr<SharedExecutorMemory> shared_memory;  // null: the memory plan's own
  ArenaLayout arena;  // the plan's, with results placed over residuals (in_place_residuals)
  MemoryPlan memory;
  std::vector<std::pair<std::string, Location>> output_locations;
  std::vector<std::vector<Stage>> kernels;
  // Per kernel, per stage: microseconds of each execute_timed() run (describe_kernel).
  std::vector<std::vector<std::vector<double>>> stage_us;
  PlanExecutorStats stats;
  PackedWeights own_packing;
  std::vector<std::string> packed_only;  // read only packed, not released yet
  // A packing holding the graph's weights (packed_weights.hpp): the constants this
  // executor reads plain, registered there so that no other executor drops them.
  PackedWeights* holding = nullptr;
  std::vector<std::string> plain_reads;

  Impl(const Graph& g, const Plan& p, const std::map<std::string, std::string>& alternatives,
       const PlanExecutorOptions& options)
      : graph(g), plan(p), arena(in_place_residuals(g, p)), memory(g, arena.slots, arena.bytes) {
    stats.kernels = p.kernels.size();
    stats.arena_bytes = arena.bytes;
    for (const auto& w : g.weights()) {
      stats.weight_bytes += static_cast<std::int64_t>(g.tensor(w).data->nbytes());
    }
    for (const auto& out : g.outputs) {
      std::optional<Location> loc = memory.locate_or_none(out);
      if (!loc) {
        for (const auto& [alt, main] : alternatives) {
          if (main == out) {
            if (auto l = memory.locate_or_none(alt); l && l->kind == Location::Kind::Arena) loc = l;
          }
        }
      }
      if (!loc) fail("plan executor: graph output '{}' has no location in the plan", out);
      output_locations.emplace_back(out, *loc);
    }
    PackedWeights& packing = options.packing ? *options.packing : own_packing;
    if (packing.holds_weights_of(g)) {
      holding = &packing;
      restore_plain_reads(g, p);
    }
    StageBuilder builder(g, engine, memory, stats);
    for (const auto& pk : p.kernels) kernels.push_back(builder.build(pk));
    return_freed_heap();
    const KeptLayouts kept =
        choose_channels_last(kernels, g, engine, boundary_layouts(g, alternatives, options));
    // Weights read only packed: handed back now, or kept for release_packed_weights().
    const auto release = [&](const std::string& w) {
      if (holding) {
        if (holding->release(w)) count_released(w);
        return;
      }
      if (!options.release_weight) return packed_only.push_back(w);
      count_released(w);
      options.release_weight(w);
    };
    const std::vector<std::string> read_plain =
        build_linear_ops(kernels, g, engine, stream, kept, memory, stats, packing, release);
    if (holding) {
      for (const auto& w : read_plain) {
        // restore_plain_reads() must have foreseen every plain read.
        if (holding->released(w)) {
          internal_error(
              "plan executor: weight '{}' is read plain but only its packed copy is held", w);
        }
        holding->add_plain_reader(w);
        plain_reads.push_back(w);
      }
    }
    relayout_loops(kernels, g, engine, kept, memory, stats);
    return_freed_heap();
    relayout_memory_bound_ops(kernels, g, engine, kept);
    check_in_place_residuals();
    // The loops are final: their row buffers share one pool block.
    for (auto& stages : kernels) {
      for (auto& st : stages) {
        if (auto* l = std::get_if<LoopStage>(&st)) {
          memory.loop_pool().begin_user();
          memory.loop_pool().take(l->loop->buffer_bytes());
        }
      }
    }
    // Offsets are fixed: allocate the pools and point every stage at its memory.
    shared_memory = options.memory;
    memory.allocate_pools(shared_memory.get());
    stats.scratch_bytes = memory.scratch_bytes();
    stats.layout_bytes = memory.layout_bytes();
    bind_stages();
    // Index tables the loops hold (their own row buffers are gone), and the pool.
    stats.loop_buffer_bytes = memory.loop_buffer_bytes();
    stats.loop_scratch_bytes = stats.loop_buffer_bytes;
    for (auto& stages : kernels) {
      for (auto& st : stages) {
        if (auto* l = std::get_if<LoopStage>(&st)) {
          stats.loop_scratch_bytes += l->loop->scratch_bytes();
        }
      }
    }
    return_freed_heap();
  }

  ~Impl() {
    for (const auto& w : plain_reads) holding->remove_plain_reader(w);
  }

  // The weights of `g` whose originals the holding packing dropped, put back where a node
  // of the plan reads them otherwise than as a linear stage's weights (input 1), which
  // take the packed copy.
  void restore_plain_reads(const Graph& g, const Plan& p) {
    for (const auto& pk : p.kernels) {
      for (std::size_t n : pk.nodes) {
        const Node& node = g.nodes[n];
        for (std::size_t i = 0; i < node.inputs.size(); ++i) {
          const std::string& t = node.inputs[i];
          if (t.empty() || !holding->released(t)) continue;
          const bool as_weights = i == 1 && node.inputs[0] != t && runs_as_linear_stage(g, node);
          if (!as_weights) holding->restore(engine, stream, t);
        }
      }
    }
  }

  // A result placed over a residual is safe only where its kernel is the one convolution
  // whose post-op reads that residual (in_place_residuals decides so from the plan; the
  // stages built must agree, or the run would read what it overwrote).
  void check_in_place_residuals() const {
    for (std::size_t k : arena.in_place_kernels) {
      const auto& stages = kernels.at(k);
      if (stages.size() != 1 || !std::holds_alternative<LinearStage>(stages[0])) {
        internal_error(
            "plan executor: kernel {} writes over a residual but is not one linear "
            "stage",
            k);
      }
    }
  }

  // Points the stages that hold addresses at the arena and pools.
  void bind_stages() {
    for (auto& stages : kernels) {
      for (auto& st : stages) {
        if (auto* r = std::get_if<ReferenceStage>(&st)) bind_views(*r, memory);
        if (auto* l = std::get_if<LinearStage>(&st)) bind_layout_buffers(*l, memory);
        if (auto* l = std::get_if<LoopStage>(&st)) l->loop->use_buffers(memory.loop_pool().at(0));
      }
    }
  }

  // Before a run: inputs bound, and the stages moved along with shared memory another
  // executor replaced since the last run.
  void prepare_run(const TensorMap& inputs) {
    memory.bind_inputs(inputs);
    if (memory.follow_shared_memory()) bind_stages();
  }

  void count_released(const std::string& weight) {
    stats.released_weight_bytes += static_cast<std::int64_t>(graph.tensor(weight).data->nbytes());
  }

  void run_stage(Stage& stage) {
    std::visit(Overloaded{
                   [&](LinearStage& l) {
                     for (std::size_t i = 0; i < l.extra.size(); ++i) {
                       l.extra_ptrs[i] = memory.address(l.extra[i]);
                     }
                     // Packed weights: the original may have been released.
                     l.op.run(stream, memory.address(l.a),
                              l.op.packed_weights ? nullptr : memory.address(l.b),
                              memory.mutable_address(l.y), l.extra_ptrs);
                     stream.wait();
                   },
                   [&](MemoryBoundStage& u) {
                     for (std::size_t i = 0; i < u.xs.size(); ++i) {
                       u.x_ptrs[i] = memory.address(u.xs[i]);
                     }
                     u.op.run(stream, u.x_ptrs, memory.mutable_address(u.y));
                     stream.wait();
                   },
                   [&](LoopStage& l) {
                     for (std::size_t i = 0; i < l.reads.size(); ++i) {
                       l.read_ptrs[i] = memory.address(l.reads[i]);
                     }
                     for (std::size_t i = 0; i < l.writes.size(); ++i) {
                       l.write_ptrs[i] = memory.mutable_address(l.writes[i]);
                     }
                     for (auto& c : l.plain_copies) {
                       std::byte* plain = memory.layout_pool().at(c.offset);
                       c.plain.set_data_handle(plain);
                       if (c.write) {
                         c.stored.set_data_handle(l.write_ptrs[c.index]);
                         l.write_ptrs[c.index] = plain;
                       } else {
                         c.stored.set_data_handle(const_cast<std::byte*>(l.read_ptrs[c.index]));
                         c.reorder.execute(stream, c.stored, c.plain);
                         l.read_ptrs[c.index] = plain;
                       }
                     }
                     if (!l.plain_copies.empty()) stream.wait();
                     l.loop->run(l.read_ptrs, l.write_ptrs);
                     for (auto& c : l.plain_copies) {
                       if (c.write) c.reorder.execute(stream, c.plain, c.stored);
                     }
                     if (!l.plain_copies.empty()) stream.wait();
                   },
                   [&](Int8LinearStage& q) {
                     q.op.run(stream, memory.address(q.x), memory.mutable_address(q.y));
                     stream.wait();
                   },
                   [&](ReferenceStage& r) {
                     for (const auto& [view, input] : r.rebound) {
                       r.in_views[view].rebind(const_cast<std::byte*>(memory.input_address(input)));
                     }
                     r.kernel(*r.node, r.ins, r.out_views);
                   },
               },
               stage);
  }

  void execute(const TensorMap& inputs) {
    prepare_run(inputs);
    for (auto& stages : kernels) {
      for (Stage& st : stages) run_stage(st);
    }
  }

  std::vector<double> execute_timed(const TensorMap& inputs) {
    prepare_run(inputs);
    std::vector<double> us;
    us.reserve(kernels.size());
    stage_us.resize(kernels.size());
    using Clock = std::chrono::steady_clock;
    auto micros = [](Clock::time_point a, Clock::time_point b) {
      return std::chrono::duration<double, std::micro>(b - a).count();
    };
    for (std::size_t k = 0; k < kernels.size(); ++k) {
      auto& stages = kernels[k];
      stage_us[k].resize(stages.size());
      const auto start = Clock::now();
      auto last = start;
      for (std::size_t s = 0; s < stages.size(); ++s) {
        run_stage(stages[s]);
        const auto now = Clock::now();
        stage_us[k][s].push_back(micros(last, now));
        last = now;
      }
      us.push_back(micros(start, last));
    }
    return us;
  }

  // Median microseconds of stage `s` of kernel `k` over the execute_timed() runs so far.
  std::optional<double> stage_median(std::size_t k, std::size_t s) const {
    if (k >= stage_us.size() || s >= stage_us[k].size() || stage_us[k][s].empty()) {
      return std::nullopt;
    }
    std::vector<double> v = stage_us[k][s];
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  }

  std::string describe_kernel(std::size_t k) const {
    std::string ops, how;
    for (std::size_t n : plan.kernels.at(k).nodes) {
      ops += (ops.empty() ? "" : "+") + graph.nodes[n].op_type;
    }
    const auto& stages = kernels.at(k);
    for (std::size_t s = 0; s < stages.size(); ++s) {
      const Stage& stage = stages[s];
      if (!how.empty()) how += " | ";
      how += std::visit(Overloaded{
                            [](const LinearStage& l) {
                              std::string s = "onednn " + l.op.implementation;
                              if (l.op.src_reorder) s += " (reorder in)";
                              if (l.op.sum_at) s += " (residual summed in place)";
                              if (l.op.dst_reorder) s += " (reorder out)";
                              return s;
                            },
                            [](const LoopStage&) { return std::string("fused loop"); },
                            [](const MemoryBoundStage& u) {
                              const bool own = !u.op.copies.empty() || u.op.window_max;
                              return own ? u.op.implementation : "onednn " + u.op.implementation;
                            },
                            [](const Int8LinearStage& q) { return q.op.describe(); },
                            [](const ReferenceStage& r) {
                              return (r.block_copies ? "copies " : "reference ") + r.node->op_type;
                            },
                        },
                        stage);
      // Where a kernel has several stages, each one's share once execute_timed() ran.
      if (const auto us = stage_median(k, s); us && stages.size() > 1) {
        how += fmt::format(" {:.3f} ms", *us / 1000.0);
      }
    }
    return ops + ": " + how;
  }

  TensorMap outputs() const {
    if (memory.shared_memory_moved()) {
      internal_error("plan executor: outputs asked for after another executor took its memory");
    }
    TensorMap out;
    for (const auto& [name, loc] : output_locations) {
      const TensorInfo& info = graph.tensor(name);
      Tensor t(info.dtype, info.shape);
      std::memcpy(t.raw(), memory.address(loc), t.nbytes());
      out[name] = std::move(t);
    }
    return out;
  }
};

PlanExecutor::PlanExecutor(const Graph& graph, const Plan& plan,
                           const std::map<std::string, std::string>& alternatives,
                           const PlanExecutorOptions& options)
    : impl_(std::make_unique<Impl>(graph, plan, alternatives, options)) {
  if (flush_denormals()) impl_->workers_flushed.emplace();
}

PlanExecutor::~PlanExecutor() = default;

void PlanExecutor::release_packed_weights(
    const std::function<void(const std::string& weight)>& release) {
  for (const auto& w : impl_->packed_only) {
    impl_->count_released(w);
    release(w);
  }
  impl_->packed_only.clear();
}

void PlanExecutor::execute(const TensorMap& inputs) {
  const DenormalsFlushed flushed(impl_->workers_flushed.has_value());
  impl_->execute(inputs);
}

TensorMap PlanExecutor::outputs() const {
  return impl_->outputs();
}

const PlanExecutorStats& PlanExecutor::stats() const {
  return impl_->stats;
}

std::vector<double> PlanExecutor::execute_timed(const TensorMap& inputs) {
  const DenormalsFlushed flushed(impl_->workers_flushed.has_value());
  return impl_->execute_timed(inputs);
}

std::string PlanExecutor::describe_kernel(std::size_t k) const {
  return impl_->describe_kernel(k);
}

}  // namespace orchid
