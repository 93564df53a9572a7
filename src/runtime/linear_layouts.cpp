#include "runtime/linear_layouts.hpp"

#include "cost/layout_policy.hpp"
#include "util/overloaded.hpp"

namespace orchid {

namespace {

void add_linear_uses(LinearStage& l, const Graph& graph, const dnnl::engine& engine,
                     LayoutUses& uses) {
  uses.add(l.wei, LayoutUse::Plain);  // weights are read plain
  l.prefers_nhwc = conv_prefers_nhwc(engine, graph, *l.node);
  if (!l.prefers_nhwc) {
    uses.add(l.src, LayoutUse::Plain);
    uses.add(l.dst, LayoutUse::Plain);
    for (const auto& po : l.post_ops) {
      if (po.kind == PostOp::Kind::Binary) uses.add(po.operand, LayoutUse::Plain);
    }
    return;
  }
  uses.add(l.dst, LayoutUse::ChannelsLastWrite);
  uses.add(l.src, LayoutUse::ChannelsLastSource);
  const Shape& out = graph.tensor(l.dst).shape;
  for (const auto& po : l.post_ops) {
    if (po.kind != PostOp::Kind::Binary) continue;
    uses.add(po.operand, graph.tensor(po.operand).shape == out ? LayoutUse::ChannelsLastOperand
                                                               : LayoutUse::Plain);
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
  for (auto& stages : kernels) {
    for (Stage& st : stages) {
      std::visit(Overloaded{
                     [&](LinearStage& l) { add_linear_uses(l, graph, engine, uses); },
                     [&](LoopStage& l) { plain_reads(l.read_names); },
                     [&](UnaryDnnlStage& u) { plain_reads(u.read_names); },
                     [&](ReferenceStage& r) { plain_reads(r.read_names); },
                 },
                 st);
    }
  }
  return uses.channels_last();
}

void build_linear_ops(std::vector<std::vector<Stage>>& kernels, const Graph& graph,
                      const dnnl::engine& engine, dnnl::stream& stream,
                      const std::set<std::string>& nhwc, MemoryPlan& memory,
                      PlanExecutorStats& stats) {
  for (auto& stages : kernels) {
    for (Stage& st : stages) {
      auto* l = std::get_if<LinearStage>(&st);
      if (!l) continue;
      LinearLayout layout;
      layout.nhwc = l->prefers_nhwc;
      layout.src_stored_nhwc = nhwc.count(l->src) > 0;
      layout.dst_stored_nhwc = nhwc.count(l->dst) > 0;
      for (const auto& po : l->post_ops) {
        const bool binary = po.kind == PostOp::Kind::Binary;
        layout.operand_stored_nhwc.push_back(binary && nhwc.count(po.operand) > 0);
        layout.operand_used_nhwc.push_back(binary && l->prefers_nhwc &&
                                           graph.tensor(po.operand).shape ==
                                               graph.tensor(l->dst).shape);
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
      if (l->op.src_reorder || l->op.dst_reorder || layout.nhwc) ++stats.blocked_convolutions;
      stats.nhwc_handoffs += layout.src_stored_nhwc;
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
