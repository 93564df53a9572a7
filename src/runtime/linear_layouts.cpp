#include "runtime/linear_layouts.hpp"

#include <map>
#include <optional>
#include <tuple>

#include "cost/layout_policy.hpp"
#include "runtime/onednn_memory.hpp"
#include "util/error.hpp"
#include "util/overloaded.hpp"

namespace orchid {

namespace {

// The layout each tensor's channels-last (preferred-layout) uses need: a tensor stays in
// a convolution's preferred layout only where all of them agree on one.
using WantedLayouts = std::map<std::string, std::vector<dnnl::memory::desc>>;

void add_linear_uses(LinearStage& l, const Graph& graph, const dnnl::engine& engine,
                     LayoutUses& uses, WantedLayouts& wanted) {
  uses.add(l.wei, LayoutUse::Plain);  // weights are read plain
  for (const auto& t : l.views) uses.add(t, LayoutUse::Plain);
  l.preferred = conv_preferred_layouts(engine, graph, *l.node);
  if (!l.preferred) {
    uses.add(l.src, LayoutUse::Plain);
    uses.add(l.dst, LayoutUse::Plain);
    for (const auto& po : l.post_ops) {
      if (po.kind == PostOp::Kind::Binary) uses.add(po.operand, LayoutUse::Plain);
    }
    return;
  }
  uses.add(l.dst, LayoutUse::ChannelsLastWrite);
  uses.add(l.src, LayoutUse::ChannelsLastSource);
  wanted[l.dst].push_back(l.preferred->dst);
  wanted[l.src].push_back(l.preferred->src);
  const Shape& out = graph.tensor(l.dst).shape;
  for (const auto& po : l.post_ops) {
    if (po.kind != PostOp::Kind::Binary) continue;
    const bool full = graph.tensor(po.operand).shape == out;
    uses.add(po.operand, full ? LayoutUse::ChannelsLastOperand : LayoutUse::Plain);
    if (full) wanted[po.operand].push_back(l.preferred->dst);
  }
}

// Pooling, spatial means, resampling and concatenation run in the layout the convolutions
// prefer for their sources and result when all can be stored so and oneDNN has more than
// its reference kernel for it (they then count as such a convolution's uses); a
// transposition (a reorder) reads and writes whatever layouts are kept, as a loop does.
void add_memory_bound_uses(const MemoryBoundStage& u, const Graph& graph,
                           const dnnl::engine& engine, LayoutUses& uses, WantedLayouts& wanted) {
  if (memory_bound_any_layouts(*u.node)) {
    for (std::size_t i = 0; i < u.sources; ++i) uses.add(u.read_names[i], LayoutUse::LoopRead);
    for (std::size_t i = u.sources; i < u.read_names.size(); ++i) {
      uses.add(u.read_names[i], LayoutUse::Plain);
    }
    uses.add(u.write_name, LayoutUse::LoopWrite);
    return;
  }
  MemoryBoundLayouts layouts;
  bool preferred = true;
  for (std::size_t i = 0; i < u.sources; ++i) {
    const std::string& input = u.node->inputs[i];
    layouts.srcs.push_back(
        graph.is_constant(input)
            ? std::nullopt
            : activation_preferred_layout(engine, to_dims(graph.tensor(input).shape)));
    preferred = preferred && layouts.srcs.back().has_value();
  }
  if (!u.result_any_layout) {
    layouts.dst = activation_preferred_layout(engine, to_dims(graph.tensor(u.write_name).shape));
  }
  for (std::size_t i = u.sources; i < u.read_names.size(); ++i) {
    uses.add(u.read_names[i], LayoutUse::Plain);
  }
  // Only where oneDNN has a fast kernel for that layout: its reference resampling on
  // blocked layouts ran SegFormer-B0's decoder 15x slower than plain.
  auto fast = [&] {
    std::optional<MemoryBoundOp> op = make_memory_bound(engine, graph, *u.node, layouts);
    return op && !is_reference_implementation(op->implementation);
  };
  // A result with the same bytes in every layout is written in whichever is kept.
  if (u.result_any_layout) uses.add(u.write_name, LayoutUse::LoopWrite);
  if (!preferred || !(layouts.dst || u.result_any_layout) || !fast()) {
    for (std::size_t i = 0; i < u.sources; ++i) uses.add(u.read_names[i], LayoutUse::Plain);
    if (!u.result_any_layout) uses.add(u.write_name, LayoutUse::Plain);
    return;
  }
  for (std::size_t i = 0; i < u.sources; ++i) {
    uses.add(u.read_names[i], LayoutUse::ChannelsLastSource);
    wanted[u.read_names[i]].push_back(*layouts.srcs[i]);
  }
  if (u.result_any_layout) return;
  uses.add(u.write_name, LayoutUse::ChannelsLastWrite);
  wanted[u.write_name].push_back(*layouts.dst);
}

}  // namespace

KeptLayouts choose_channels_last(std::vector<std::vector<Stage>>& kernels, const Graph& graph,
                                 const dnnl::engine& engine, const GraphBoundaryLayouts& boundary) {
  LayoutUses uses;
  for (const auto& t : boundary.plain) uses.add(t, LayoutUse::Plain);
  for (const auto& t : boundary.written_nhwc) uses.add(t, LayoutUse::ChannelsLastWrite);
  for (const auto& t : boundary.read_nhwc) uses.add(t, LayoutUse::ChannelsLastSource);
  auto plain_reads = [&](const std::vector<std::string>& reads) {
    for (const auto& t : reads) uses.add(t, LayoutUse::Plain);
  };
  WantedLayouts wanted;
  for (auto& stages : kernels) {
    for (Stage& st : stages) {
      std::visit(
          Overloaded{
              [&](LinearStage& l) { add_linear_uses(l, graph, engine, uses, wanted); },
              [&](LoopStage& l) {
                for (const auto& t : l.read_names) uses.add(t, LayoutUse::LoopRead);
                for (const auto& t : l.loop->writes()) uses.add(t, LayoutUse::LoopWrite);
              },
              [&](MemoryBoundStage& u) { add_memory_bound_uses(u, graph, engine, uses, wanted); },
              [&](Int8LinearStage& q) {  // int8 tensors stay plain in the arena
                plain_reads(q.read_names);
                uses.add(q.write_name, LayoutUse::Plain);
              },
              [&](ReferenceStage& r) {
                plain_reads(r.read_names);
                plain_reads(r.node->outputs);
              },
          },
          st);
    }
  }
  for (const auto& [tensor, layouts] : wanted) {
    for (const auto& l : layouts) {
      if (l != layouts.front()) uses.add(tensor, LayoutUse::Plain);  // they disagree
    }
  }
  // Pooling, resampling and concatenation run fast only with sources and result in one
  // layout (oneDNN takes its reference kernel for a mix): keep all or none.
  for (bool mixed = true; mixed;) {
    mixed = false;
    const std::set<std::string> chosen = uses.channels_last();
    for (const auto& stages : kernels) {
      for (const Stage& st : stages) {
        const auto* u = std::get_if<MemoryBoundStage>(&st);
        if (!u || memory_bound_any_layouts(*u->node)) continue;
        const std::size_t kept =
            u->result_any_layout ? chosen.count(u->read_names[0]) : chosen.count(u->write_name);
        bool same = true;
        for (std::size_t i = 0; i < u->sources; ++i) {
          same = same && chosen.count(u->read_names[i]) == kept;
        }
        if (same) continue;
        for (std::size_t i = 0; i < u->sources; ++i) uses.add(u->read_names[i], LayoutUse::Plain);
        if (!u->result_any_layout) uses.add(u->write_name, LayoutUse::Plain);
        mixed = true;
      }
    }
  }
  KeptLayouts kept;
  for (const auto& t : uses.channels_last()) {
    // A boundary tensor only fused loops touch has no convolution to say which layout.
    if (auto it = wanted.find(t); it != wanted.end()) kept.emplace(t, it->second.front());
  }
  return kept;
}

namespace {

// Per constant: how many linear stages take it as their weights, or -1 when some stage
// reads it otherwise (as a source, a post-op operand, in a loop or a reference kernel).
std::map<std::string, int> weight_uses(const std::vector<std::vector<Stage>>& kernels,
                                       const Graph& graph) {
  std::map<std::string, int> uses;
  auto read_raw = [&](const std::string& t) {
    if (graph.is_constant(t)) uses[t] = -1;
  };
  for (const auto& stages : kernels) {
    for (const Stage& st : stages) {
      std::visit(Overloaded{
                     [&](const LinearStage& l) {
                       read_raw(l.src);
                       for (const auto& p : l.post_ops) {
                         if (p.kind == PostOp::Kind::Binary) read_raw(p.operand);
                       }
                     },
                     [&](const LoopStage& l) {
                       // Its loop is compiled again later (relayout_loops), reading the
                       // values of constants it holds as immediates: all its nodes' inputs.
                       for (const auto& t : l.read_names) read_raw(t);
                       for (std::size_t n : l.nodes) {
                         for (const auto& t : graph.nodes[n].inputs) {
                           if (!t.empty()) read_raw(t);
                         }
                       }
                     },
                     [&](const auto& other) {
                       for (const auto& t : other.read_names) read_raw(t);
                     },
                 },
                 st);
    }
  }
  for (const auto& stages : kernels) {
    for (const Stage& st : stages) {
      const auto* l = std::get_if<LinearStage>(&st);
      if (!l || !graph.is_constant(l->wei)) continue;
      int& n = uses[l->wei];
      if (n >= 0) ++n;
    }
  }
  return uses;
}

}  // namespace

std::vector<std::string> build_linear_ops(std::vector<std::vector<Stage>>& kernels,
                                          const Graph& graph, const dnnl::engine& engine,
                                          dnnl::stream& stream, const KeptLayouts& kept,
                                          MemoryPlan& memory, PlanExecutorStats& stats,
                                          PackedWeights& packing,
                                          const std::function<void(const std::string&)>& release) {
  std::map<std::string, int> uses = weight_uses(kernels, graph);
  std::set<const dnnl::memory*> counted_copies;
  for (auto& stages : kernels) {
    for (Stage& st : stages) {
      auto* l = std::get_if<LinearStage>(&st);
      if (!l) continue;
      LinearLayout layout;
      layout.preferred = l->preferred;
      layout.src_stored_preferred = kept.count(l->src) > 0;
      layout.dst_stored_preferred = kept.count(l->dst) > 0;
      std::size_t operand = 0;  // binary post-ops' operands are l->extra, in order
      for (const auto& po : l->post_ops) {
        const bool binary = po.kind == PostOp::Kind::Binary;
        layout.operand_stored_preferred.push_back(binary && kept.count(po.operand) > 0);
        layout.operand_used_preferred.push_back(
            binary && l->preferred && graph.tensor(po.operand).shape == graph.tensor(l->dst).shape);
        const Location* at = binary ? &l->extra.at(operand++) : nullptr;
        layout.operand_in_place.push_back(at && at->kind == Location::Kind::Arena &&
                                          l->y.kind == Location::Kind::Arena &&
                                          at->offset == l->y.offset);
      }
      l->op = make_linear(engine, stream, graph, *l->node, l->post_ops, layout, packing);
      if (auto it = uses.find(l->wei); it != uses.end() && it->second > 0) {
        // Read unpacked here: never released. Packed by its last user: released now.
        it->second = l->op.packed_weights ? it->second - 1 : -1;
        if (it->second == 0 && release) release(l->wei);
      }
      // Stages run one after another, so the reordered copies of every convolution share
      // one pool (source, result, operands, in that order).
      memory.layout_pool().begin_user();
      for (dnnl::memory* m : l->op.reordered_copies()) {
        l->copy_offsets.push_back(
            memory.layout_pool().take(static_cast<std::int64_t>(m->get_desc().get_size())));
      }
      // Each packed copy once, however many primitives share it (ALBERT's layers).
      if (l->op.packed_weights && counted_copies.insert(l->op.packed.get()).second) {
        stats.packed_weight_bytes += static_cast<std::int64_t>(l->op.wei.get_desc().get_size());
      }
      if (l->op.src_reorder || l->op.dst_reorder || layout.preferred) {
        ++stats.blocked_convolutions;
      }
      stats.nhwc_handoffs += layout.src_stored_preferred;
      stats.summed_residuals += l->op.sum_at.has_value();
    }
  }
  std::vector<std::string> plain;
  for (const auto& [name, n] : uses) {
    if (n < 0) plain.push_back(name);
  }
  return plain;
}

void relayout_memory_bound_ops(std::vector<std::vector<Stage>>& kernels, const Graph& graph,
                               const dnnl::engine& engine, const KeptLayouts& kept) {
  for (auto& stages : kernels) {
    for (Stage& st : stages) {
      auto* u = std::get_if<MemoryBoundStage>(&st);
      if (!u) continue;
      MemoryBoundLayouts layouts;
      bool any = false;
      for (std::size_t i = 0; i < u->sources; ++i) {
        auto it = kept.find(u->read_names[i]);
        layouts.srcs.push_back(it != kept.end() ? std::optional(it->second) : std::nullopt);
        any = any || layouts.srcs.back().has_value();
      }
      if (auto it = kept.find(u->write_name); it != kept.end() && !u->result_any_layout) {
        layouts.dst = it->second;
      }
      if (!any && !layouts.dst) continue;
      std::optional<MemoryBoundOp> op = make_memory_bound(engine, graph, *u->node, layouts);
      if (!op) internal_error("{}: no oneDNN primitive in its stored layouts", u->node->describe());
      u->op = std::move(*op);
    }
  }
}

namespace {

// A loop walking the logical order of a tensor stored channels-last reads its elements a
// channel's stride apart: each row touches every cache line of the tensor, so a tensor
// larger than a core's caches streams from memory once per row. Candy's instance
// normalisations over 32x224x224 took 2.1 ms for a variance and 2.4 ms to normalise and
// pad. From this size on, such a loop reads and writes plain copies, reordered by oneDNN.
constexpr std::int64_t kPlainCopyMinBytes = 1 << 20;

}  // namespace

void relayout_loops(std::vector<std::vector<Stage>>& kernels, const Graph& graph,
                    const dnnl::engine& engine, const KeptLayouts& kept, MemoryPlan& memory,
                    PlanExecutorStats& stats) {
  // One offset table per tensor (4 bytes per element), shared by the loops reading or
  // writing it and dropped after the last of them: kept all at once they took 156 MB of
  // Candy's executor build.
  std::map<std::string, std::size_t> uses_left;
  for (const auto& stages : kernels) {
    for (const Stage& st : stages) {
      const auto* l = std::get_if<LoopStage>(&st);
      if (!l) continue;
      for (const auto& t : l->read_names) uses_left[t] += kept.count(t);
      for (const auto& t : l->loop->writes()) uses_left[t] += kept.count(t);
    }
  }
  std::map<std::string, std::shared_ptr<const StoredLayout>> computed;
  auto layout_of = [&](const std::string& t) {
    auto& l = computed[t];
    if (!l) l = std::make_shared<const StoredLayout>(stored_layout(kept.at(t)));
    return l;
  };
  auto used = [&](const std::string& t) {
    if (kept.count(t) && --uses_left[t] == 0) computed.erase(t);
  };
  for (auto& stages : kernels) {
    for (Stage& st : stages) {
      auto* l = std::get_if<LoopStage>(&st);
      if (!l) continue;
      StoredLayouts layouts;
      const std::vector<std::string>& reads = l->loop->reads();
      const std::vector<std::string>& writes = l->loop->writes();
      for (std::size_t i = 0; i < reads.size(); ++i) {
        if (kept.count(l->read_names[i])) layouts[reads[i]] = layout_of(l->read_names[i]);
      }
      for (const auto& t : writes) {
        if (kept.count(t)) layouts[t] = layout_of(t);
      }
      if (layouts.empty()) continue;
      auto loop = FusedLoop::compile(graph, l->nodes, l->needed, layouts);
      if (!loop) internal_error("fused loop refused its stored layouts: {}", loop.refusal().why);
      layouts.clear();
      for (const auto& t : l->read_names) used(t);
      for (const auto& t : writes) used(t);
      if (!(*loop)->walks_storage_order()) {
        // The kept tensors it reads and writes: (index into reads or writes, write?, name).
        std::vector<std::tuple<std::size_t, bool, std::string>> stored;
        for (std::size_t i = 0; i < reads.size(); ++i) {
          if (kept.count(l->read_names[i])) stored.emplace_back(i, false, l->read_names[i]);
        }
        for (std::size_t i = 0; i < writes.size(); ++i) {
          if (kept.count(writes[i])) stored.emplace_back(i, true, writes[i]);
        }
        std::int64_t largest = 0;
        for (const auto& [i, write, t] : stored) {
          largest = std::max<std::int64_t>(largest, kept.at(t).get_size());
        }
        if (largest >= kPlainCopyMinBytes) {
          // The loop compiled for plain tensors stays; every kept tensor it reads or
          // writes goes through a plain copy.
          memory.layout_pool().begin_user();
          for (const auto& [i, write, t] : stored) {
            LoopStage::PlainCopy c;
            c.index = i;
            c.write = write;
            c.stored = dnnl::memory(kept.at(t), engine, DNNL_MEMORY_NONE);
            c.plain = dnnl::memory(plain_desc(kept.at(t).dims()), engine, DNNL_MEMORY_NONE);
            c.reorder = write ? dnnl::reorder(c.plain, c.stored) : dnnl::reorder(c.stored, c.plain);
            c.offset =
                memory.layout_pool().take(static_cast<std::int64_t>(c.plain.get_desc().get_size()));
            l->plain_copies.push_back(std::move(c));
          }
          ++stats.plain_copy_loops;
          continue;
        }
      }
      // The same tensors, possibly in another order: carry their places over by name.
      std::map<std::string, std::pair<Location, std::string>> read_at;
      std::map<std::string, Location> write_at;
      for (std::size_t i = 0; i < reads.size(); ++i) {
        read_at.emplace(reads[i], std::make_pair(l->reads[i], l->read_names[i]));
      }
      for (std::size_t i = 0; i < writes.size(); ++i) write_at.emplace(writes[i], l->writes[i]);
      LoopStage next;
      next.nodes = std::move(l->nodes);
      next.needed = std::move(l->needed);
      for (const auto& t : (*loop)->reads()) {
        const auto& [where, name] = read_at.at(t);
        next.reads.push_back(where);
        next.read_names.push_back(name);
      }
      for (const auto& t : (*loop)->writes()) next.writes.push_back(write_at.at(t));
      next.read_ptrs.resize(next.reads.size());
      next.write_ptrs.resize(next.writes.size());
      next.loop = std::move(*loop);
      *l = std::move(next);
      ++stats.stored_layout_loops;
    }
  }
}

void bind_layout_buffers(LinearStage& stage, MemoryPlan& memory) {
  const std::vector<dnnl::memory*> copies = stage.op.reordered_copies();
  for (std::size_t i = 0; i < copies.size(); ++i) {
    copies[i]->set_data_handle(memory.layout_pool().at(stage.copy_offsets[i]));
  }
}

}  // namespace orchid
