#include "runtime/linear_layouts.hpp"

#include <map>

#include "cost/layout_policy.hpp"
#include "util/overloaded.hpp"

namespace orchid {

namespace {

// The layout each tensor's channels-last (preferred-layout) uses need: a tensor stays in
// a convolution's preferred layout only where all of them agree on one.
using WantedLayouts = std::map<std::string, std::vector<dnnl::memory::desc>>;

void add_linear_uses(LinearStage& l, const Graph& graph, const dnnl::engine& engine,
                     LayoutUses& uses, WantedLayouts& wanted) {
  uses.add(l.wei, LayoutUse::Plain);  // weights are read plain
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

}  // namespace

std::set<std::string> choose_channels_last(std::vector<std::vector<Stage>>& kernels,
                                           const Graph& graph, const dnnl::engine& engine,
                                           const GraphBoundaryLayouts& boundary) {
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
      std::visit(Overloaded{
                     [&](LinearStage& l) { add_linear_uses(l, graph, engine, uses, wanted); },
                     [&](LoopStage& l) { plain_reads(l.read_names); },
                     [&](UnaryDnnlStage& u) { plain_reads(u.read_names); },
                     [&](ReferenceStage& r) { plain_reads(r.read_names); },
                 },
                 st);
    }
  }
  for (const auto& [tensor, layouts] : wanted) {
    for (const auto& l : layouts) {
      if (l != layouts.front()) uses.add(tensor, LayoutUse::Plain);  // they disagree
    }
  }
  return uses.channels_last();
}

void build_linear_ops(std::vector<std::vector<Stage>>& kernels, const Graph& graph,
                      const dnnl::engine& engine, dnnl::stream& stream,
                      const std::set<std::string>& kept, MemoryPlan& memory,
                      PlanExecutorStats& stats) {
  for (auto& stages : kernels) {
    for (Stage& st : stages) {
      auto* l = std::get_if<LinearStage>(&st);
      if (!l) continue;
      LinearLayout layout;
      layout.preferred = l->preferred;
      layout.src_stored_preferred = kept.count(l->src) > 0;
      layout.dst_stored_preferred = kept.count(l->dst) > 0;
      for (const auto& po : l->post_ops) {
        const bool binary = po.kind == PostOp::Kind::Binary;
        layout.operand_stored_preferred.push_back(binary && kept.count(po.operand) > 0);
        layout.operand_used_preferred.push_back(
            binary && l->preferred && graph.tensor(po.operand).shape == graph.tensor(l->dst).shape);
      }
      l->op = make_linear(engine, stream, graph, *l->node, l->post_ops, layout);
      // Stages run one after another, so the reordered copies of every convolution share
      // one pool (source, result, operands, in that order).
      memory.layout_pool().begin_user();
      for (dnnl::memory* m : l->op.reordered_copies()) {
        l->copy_offsets.push_back(
            memory.layout_pool().take(static_cast<std::int64_t>(m->get_desc().get_size())));
      }
      if (l->op.packed_weights) {
        stats.packed_weight_bytes += static_cast<std::int64_t>(l->op.wei.get_desc().get_size());
      }
      if (l->op.src_reorder || l->op.dst_reorder || layout.preferred) {
        ++stats.blocked_convolutions;
      }
      stats.nhwc_handoffs += layout.src_stored_preferred;
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
