#include "runtime/stage_builder.hpp"

#include <algorithm>
#include <unordered_map>

#include "ir/op_traits.hpp"
#include "runtime/copy_kernels.hpp"
#include "runtime/kernel_dataflow.hpp"
#include "runtime/onednn_memory.hpp"
#include "util/error.hpp"

namespace orchid {

// Where each tensor of one kernel lives while compiling it.
struct StageBuilder::KernelPlaces {
  std::unordered_map<std::string, Location> where;
  std::unordered_map<std::string, std::string> source;  // kernel input -> arena tensor
  std::string arena_name(const std::string& t) const {
    auto it = source.find(t);
    return it == source.end() ? t : it->second;
  }
};

Location StageBuilder::place(KernelPlaces& places, const std::string& t) {
  if (auto it = places.where.find(t); it != places.where.end()) return it->second;
  // A weight, graph input or kernel output, else an intermediate in scratch.
  const std::optional<Location> known = memory_.locate_or_none(t);
  const Location l = known ? *known : memory_.scratch_for(t);
  places.where[t] = l;
  return l;
}

bool runs_as_linear_stage(const Graph& graph, const Node& node) {
  const OnednnAlgorithm kind = op_traits(node.op_type).onednn;
  if (kind != OnednnAlgorithm::MatMul && kind != OnednnAlgorithm::Convolution) return false;
  for (const auto& t : node.inputs) {
    if (graph.tensor(t).shape.size() < 2) return false;
  }
  return linear_supported(graph, node);
}

std::optional<std::pair<LinearStage, std::size_t>> StageBuilder::linear_stage(
    const PlannedKernel& pk, std::size_t pos, KernelPlaces& places) {
  const Node& lin = graph_.nodes[pk.nodes[pos]];
  if (!runs_as_linear_stage(graph_, lin)) return std::nullopt;
  const OnednnAlgorithm kind = op_traits(lin.op_type).onednn;
  EpilogueMatch epilogue = match_epilogue(graph_, pk, pos);
  LinearStage st;
  st.node = &lin;
  st.src = places.arena_name(lin.inputs[0]);
  st.wei = places.arena_name(lin.inputs[1]);
  st.dst = epilogue.result;
  st.a = place(places, lin.inputs[0]);
  st.b = place(places, lin.inputs[1]);
  // (Convolutions may keep blocked layouts; a MatMul's result is plain.)
  if (kind == OnednnAlgorithm::MatMul) {
    st.views = trailing_views(pk, pos + epilogue.nodes, epilogue.result);
  }
  // Written where the last view lives (BERT's query, key and value projections split
  // their heads with a Reshape that was a copy of 20 us each).
  if (!st.views.empty()) places.where[epilogue.result] = place(places, st.views.back());
  st.y = place(places, epilogue.result);
  for (const auto& p : epilogue.post_ops) {
    if (p.kind == PostOp::Kind::Binary) st.extra.push_back(place(places, p.operand));
  }
  for (auto& p : epilogue.post_ops) {
    if (p.kind == PostOp::Kind::Binary) p.operand = places.arena_name(p.operand);
  }
  st.post_ops = std::move(epilogue.post_ops);
  st.reshapes = epilogue.reshapes;
  st.extra_ptrs.resize(st.extra.size());
  const std::size_t nodes = epilogue.nodes + st.views.size();
  return std::make_pair(std::move(st), nodes);
}

std::vector<std::string> StageBuilder::trailing_views(const PlannedKernel& pk, std::size_t from,
                                                      const std::string& result) const {
  // `result`, read only by a chain of ops that keep the flat order and end the kernel,
  // each result but the last internal to it.
  if (from >= pk.nodes.size()) return {};
  const auto is_output = [&](const std::string& t) {
    return std::find(pk.outputs.begin(), pk.outputs.end(), t) != pk.outputs.end();
  };
  std::vector<std::string> views;
  std::string value = result;
  for (std::size_t i = from; i < pk.nodes.size(); ++i) {
    const Node& n = graph_.nodes[pk.nodes[i]];
    if (!keeps_flat_order(n.op_type) || n.inputs.empty() || n.inputs[0] != value ||
        n.outputs.size() != 1 || is_output(value) || readers_from(graph_, pk, 0, value) != 1) {
      return {};
    }
    for (std::size_t k = 1; k < n.inputs.size(); ++k) {
      if (!n.inputs[k].empty() && !graph_.is_constant(n.inputs[k])) return {};
    }
    value = n.outputs[0];
    views.push_back(value);
  }
  // The last is the kernel's result, stored where the arena keeps it.
  if (!is_output(value) || !memory_.locate_or_none(value)) return {};
  return views;
}

std::optional<LoopStage> StageBuilder::loop_stage(const PlannedKernel& pk, std::size_t begin,
                                                  std::size_t end, KernelPlaces& places) {
  const std::vector<std::size_t> nodes(pk.nodes.begin() + static_cast<std::ptrdiff_t>(begin),
                                       pk.nodes.begin() + static_cast<std::ptrdiff_t>(end));
  std::set<std::string> needed = needed_after(graph_, pk, begin, end);
  auto loop = FusedLoop::compile(graph_, nodes, needed);
  if (!loop) return std::nullopt;
  LoopStage st;
  st.nodes = nodes;
  st.needed = std::move(needed);
  for (const auto& t : (*loop)->reads()) {
    st.reads.push_back(place(places, t));
    st.read_names.push_back(places.arena_name(t));
  }
  for (const auto& t : (*loop)->writes()) st.writes.push_back(place(places, t));
  st.read_ptrs.resize(st.reads.size());
  st.write_ptrs.resize(st.writes.size());
  st.loop = std::move(*loop);
  return st;
}

Stage StageBuilder::single_node_stage(const Node& n, KernelPlaces& places) {
  std::vector<std::string> reads;
  for (const auto& t : n.inputs) {
    if (!t.empty()) reads.push_back(places.arena_name(t));
  }
  if (n.op_type == "QLinearConv" || n.op_type == "QLinearMatMul") {
    std::string why;
    dnnl::stream stream(engine_);
    if (auto q = make_int8_linear(engine_, stream, graph_, n, why)) {
      ++stats_.int8_primitives;
      return Int8LinearStage{&n,
                             std::move(*q),
                             std::move(reads),
                             n.outputs[0],
                             place(places, n.inputs[0]),
                             place(places, n.outputs[0])};
    }
    stats_.int8_fallbacks.push_back(
        fmt::format("{}: runs on its reference kernel: {}", n.describe(), why));
  }
  if (std::optional<MemoryBoundOp> op = make_memory_bound(engine_, graph_, n)) {
    ++stats_.dnnl_primitives;
    MemoryBoundStage st;
    st.node = &n;
    st.op = std::move(*op);
    st.read_names = std::move(reads);
    st.sources = memory_bound_sources(n);
    st.result_any_layout = memory_bound_result_any_layout(n);
    for (std::size_t i = 0; i < st.sources; ++i) st.xs.push_back(place(places, n.inputs[i]));
    st.x_ptrs.resize(st.sources);
    st.y = place(places, n.outputs[0]);
    st.write_name = n.outputs[0];
    return st;
  }
  ++stats_.reference_primitives;
  ReferenceStage st;
  st.node = &n;
  st.read_names = std::move(reads);
  st.kernel = find_copy_kernel(n.op_type);
  st.block_copies = st.kernel != nullptr;
  if (!st.kernel) st.kernel = find_reference_kernel(n.op_type);
  if (!st.kernel) unsupported("{}: no kernel for op type '{}'", n.describe(), n.op_type);
  st.in_views.reserve(n.inputs.size());
  for (const auto& t : n.inputs) {
    if (t.empty()) continue;
    const Location l = place(places, t);
    if (l.kind == Location::Kind::Constant) continue;
    const TensorInfo& info = graph_.tensor(t);
    st.in_views.push_back(Tensor::view(info.dtype, info.shape, nullptr));
    st.in_locations.push_back(l);
  }
  for (const auto& t : n.outputs) {
    const TensorInfo& info = graph_.tensor(t);
    st.out_views.push_back(Tensor::view(info.dtype, info.shape, nullptr));
    st.out_locations.push_back(place(places, t));
  }
  st.in_constants.resize(n.inputs.size(), nullptr);
  for (std::size_t i = 0; i < n.inputs.size(); ++i) {
    if (!n.inputs[i].empty() && graph_.is_constant(n.inputs[i])) {
      st.in_constants[i] = graph_.tensor(n.inputs[i]).data.get();
    }
  }
  return st;
}

std::vector<Stage> StageBuilder::build(const PlannedKernel& pk) {
  memory_.begin_kernel();
  KernelPlaces places;
  for (std::size_t i = 0; i < pk.inputs.size(); ++i) {
    places.where[pk.inputs[i]] = memory_.locate(pk.sources[i]);
    places.source[pk.inputs[i]] = pk.sources[i];
  }
  std::vector<Stage> stages;
  std::size_t pos = 0;
  const std::size_t count = pk.nodes.size();
  auto is_linear = [&](std::size_t i) {
    return op_traits(graph_.nodes[pk.nodes[i]].op_type).primitive == PrimitiveClass::Linear;
  };
  // A spatial mean runs as oneDNN's pooling (fast in the layout the convolutions keep,
  // where a loop would read it with a stride), where oneDNN has more than its reference
  // kernel for the plain layout it falls back to.
  auto is_pooled_mean = [&](std::size_t i) {
    // Not where a loop computes the mean's source in this kernel: the loop reduces it as
    // it computes it, with no intermediate (an instance norm's variance).
    const Node& n = graph_.nodes[pk.nodes[i]];
    for (std::size_t j = 0; j < i; ++j) {
      const auto& outs = graph_.nodes[pk.nodes[j]].outputs;
      if (!is_linear(j) && std::find(outs.begin(), outs.end(), n.inputs[0]) != outs.end()) {
        return false;
      }
    }
    const auto op = make_spatial_mean(engine_, graph_, n);
    return op && !is_reference_implementation(op->implementation);
  };
  // A Transpose that is its kernel's only node runs as oneDNN's reorder, a blocked
  // transposition; a loop gathers it element by element (its offset tables as large).
  auto is_lone_transpose = [&](std::size_t i) {
    if (count != 1) return false;
    const auto op = make_transpose(engine_, graph_, graph_.nodes[pk.nodes[i]]);
    return op && !is_reference_implementation(op->implementation);
  };
  while (pos < count) {
    if (is_pooled_mean(pos) || is_lone_transpose(pos)) {
      stages.push_back(single_node_stage(graph_.nodes[pk.nodes[pos]], places));
      ++pos;
      continue;
    }
    if (is_linear(pos)) {
      if (auto st = linear_stage(pk, pos, places)) {
        stats_.dnnl_primitives += 1;
        stats_.epilogue_primitives += st->second - 1 - st->first.views.size() - st->first.reshapes;
        stages.emplace_back(std::move(st->first));
        pos += st->second;
        continue;
      }
      stages.push_back(single_node_stage(graph_.nodes[pk.nodes[pos]], places));
      ++pos;
      continue;
    }
    // The longest run of memory-bound primitives from here that one loop expresses.
    std::size_t run_end = pos;
    while (run_end < count && !is_linear(run_end) && !is_pooled_mean(run_end)) ++run_end;
    bool placed = false;
    for (std::size_t end = run_end; end > pos; --end) {
      if (auto st = loop_stage(pk, pos, end, places)) {
        stats_.fused_loop_primitives += end - pos;
        ++stats_.fused_loops;
        stages.emplace_back(std::move(*st));
        pos = end;
        placed = true;
        break;
      }
    }
    if (placed) continue;
    stages.push_back(single_node_stage(graph_.nodes[pk.nodes[pos]], places));
    ++pos;
  }
  if (stages.size() == 1 && std::holds_alternative<LinearStage>(stages[0])) {
    ++stats_.fused_linear_kernels;
  }
  if (stages.size() == 1 && std::holds_alternative<LoopStage>(stages[0])) {
    ++stats_.single_loop_kernels;
  }
  return stages;
}

void bind_views(ReferenceStage& st, const MemoryPlan& memory) {
  st.ins.assign(st.node->inputs.size(), nullptr);
  std::size_t v = 0;
  for (std::size_t i = 0; i < st.node->inputs.size(); ++i) {
    if (st.node->inputs[i].empty()) continue;
    if (st.in_constants[i]) {
      st.ins[i] = st.in_constants[i];
      continue;
    }
    const Location& l = st.in_locations[v];
    if (l.kind != Location::Kind::Input) {
      st.in_views[v].rebind(const_cast<std::byte*>(memory.address(l)));
    } else {
      st.rebound.emplace_back(v, l.input);
    }
    st.ins[i] = &st.in_views[v];
    ++v;
  }
  for (std::size_t o = 0; o < st.out_views.size(); ++o) {
    st.out_views[o].rebind(memory.mutable_address(st.out_locations[o]));
  }
}

}  // namespace orchid
