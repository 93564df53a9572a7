#include "runtime/plan_executor.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <unordered_map>

#include "fission/primitive.hpp"
#include "ir/ops/window_geometry.hpp"
#include "orchestrate/kernel_view.hpp"
#include "runtime/fused/fused_loop.hpp"
#include "runtime/reference/reference_kernels.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

using dnnl::memory;

// Where a tensor a kernel reads lives.
struct Location {
  enum class Kind { Arena, Input, Constant, Scratch } kind = Kind::Arena;
  std::int64_t offset = 0;  // Arena, Scratch
  std::size_t input = 0;    // Input: position in graph.inputs
  const Tensor* constant = nullptr;
};

memory::dims to_dims(const Shape& s) {
  return memory::dims(s.begin(), s.end());
}

memory::dims row_major_strides(const memory::dims& dims) {
  memory::dims strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

memory::desc plain_desc(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, row_major_strides(dims));
}

// Right-aligns `shape` to `rank` with leading ones.
memory::dims padded(const Shape& shape, std::size_t rank) {
  memory::dims d(rank, 1);
  for (std::size_t i = 0; i < shape.size(); ++i) d[rank - shape.size() + i] = shape[i];
  return d;
}

bool broadcasts_to(const Shape& small, const Shape& big) {
  if (small.size() > big.size()) return false;
  for (std::size_t i = 0; i < small.size(); ++i) {
    const std::int64_t a = small[small.size() - 1 - i];
    const std::int64_t b = big[big.size() - 1 - i];
    if (a != 1 && a != b) return false;
  }
  return true;
}

// One linear primitive on oneDNN, optionally with post-ops. Memory objects are made
// once; each run only swaps their data handles.
struct LinearOp {
  dnnl::primitive prim;
  memory src, wei, dst;
  std::vector<memory> binary;  // post-op src1 tensors, in post-op order
  std::unordered_map<int, memory> args;

  void run(dnnl::stream& stream, const void* a, const void* b, void* y,
           const std::vector<const void*>& extra) {
    src.set_data_handle(const_cast<void*>(a));
    wei.set_data_handle(const_cast<void*>(b));
    dst.set_data_handle(y);
    for (std::size_t i = 0; i < binary.size(); ++i) {
      binary[i].set_data_handle(const_cast<void*>(extra[i]));
    }
    prim.execute(stream, args);
  }
};

struct PostOp {
  enum class Kind { Binary, Eltwise } kind;
  dnnl::algorithm algorithm;
  float alpha = 0, beta = 0;
  std::string operand;  // Binary: the other input
};

// Builds the oneDNN primitive for a MatMul or a 2-D Conv node, or nullopt when the
// node is outside what this executor maps (other ranks, non-f32, ConvTranspose).
std::optional<LinearOp> make_linear(const dnnl::engine& engine, const Graph& g, const Node& node,
                                    const std::vector<PostOp>& post_ops) {
  for (const auto& t : node.inputs) {
    if (t.empty() || g.tensor(t).dtype != DType::F32) return std::nullopt;
  }
  const Shape& ys = g.tensor(node.outputs[0]).shape;
  LinearOp op;
  memory::desc src_md, wei_md, dst_md;
  const bool is_matmul = node.op_type == "MatMul";
  if (is_matmul) {
    Shape as = g.tensor(node.inputs[0]).shape;
    Shape bs = g.tensor(node.inputs[1]).shape;
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    const std::size_t rank = std::max(as.size(), bs.size());
    const memory::dims ad = padded(as, rank), bd = padded(bs, rank);
    memory::dims yd(rank);
    for (std::size_t i = 0; i + 2 < rank; ++i) yd[i] = ad[i] == 1 ? bd[i] : ad[i];
    yd[rank - 2] = ad[rank - 2];
    yd[rank - 1] = bd[rank - 1];
    src_md = plain_desc(ad);
    wei_md = plain_desc(bd);
    dst_md = plain_desc(yd);
  } else if (node.op_type == "Conv") {
    const Shape& xs = g.tensor(node.inputs[0]).shape;
    const Shape& ws = g.tensor(node.inputs[1]).shape;
    if (xs.size() != 4 || node.inputs.size() != 2) return std::nullopt;
    const WindowGeometry geo =
        window_geometry(node, {xs.begin() + 2, xs.end()}, {ws.begin() + 2, ws.end()}, false);
    const std::int64_t group = node.attr_int("group", 1);
    src_md = plain_desc(to_dims(xs));
    dst_md = plain_desc(to_dims(ys));
    if (group == 1) {
      wei_md = plain_desc(to_dims(ws));
    } else {
      wei_md = plain_desc({group, ws[0] / group, ws[1], ws[2], ws[3]});
    }
    memory::dims strides(geo.strides.begin(), geo.strides.end());
    memory::dims dil;
    for (auto d : geo.dilations) dil.push_back(d - 1);
    memory::dims pl(geo.pad_begin.begin(), geo.pad_begin.end());
    memory::dims pr(geo.pad_end.begin(), geo.pad_end.end());
    dnnl::primitive_attr attr;
    dnnl::post_ops po;
    for (const auto& p : post_ops) {
      if (p.kind == PostOp::Kind::Eltwise) {
        po.append_eltwise(1.0f, p.algorithm, p.alpha, p.beta);
      } else {
        po.append_binary(p.algorithm, plain_desc(padded(g.tensor(p.operand).shape, 4)));
      }
    }
    attr.set_post_ops(po);
    const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                               dnnl::algorithm::convolution_direct, src_md, wei_md,
                                               dst_md, strides, dil, pl, pr);
    const dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
    op.prim = dnnl::convolution_forward(pd);
  } else {
    return std::nullopt;
  }
  if (is_matmul) {
    dnnl::primitive_attr attr;
    dnnl::post_ops po;
    for (const auto& p : post_ops) {
      if (p.kind == PostOp::Kind::Eltwise) {
        po.append_eltwise(1.0f, p.algorithm, p.alpha, p.beta);
      } else {
        po.append_binary(p.algorithm,
                         plain_desc(padded(g.tensor(p.operand).shape,
                                           static_cast<std::size_t>(dst_md.data.ndims))));
      }
    }
    attr.set_post_ops(po);
    const dnnl::matmul::desc desc(src_md, wei_md, dst_md);
    const dnnl::matmul::primitive_desc pd(desc, attr, engine);
    op.prim = dnnl::matmul(pd);
  }
  op.src = memory(src_md, engine, DNNL_MEMORY_NONE);
  op.wei = memory(wei_md, engine, DNNL_MEMORY_NONE);
  op.dst = memory(dst_md, engine, DNNL_MEMORY_NONE);
  op.args = {{DNNL_ARG_SRC, op.src}, {DNNL_ARG_WEIGHTS, op.wei}, {DNNL_ARG_DST, op.dst}};
  for (std::size_t i = 0; i < post_ops.size(); ++i) {
    if (post_ops[i].kind != PostOp::Kind::Binary) continue;
    const auto md = plain_desc(
        padded(g.tensor(post_ops[i].operand).shape, static_cast<std::size_t>(dst_md.data.ndims)));
    op.binary.push_back(memory(md, engine, DNNL_MEMORY_NONE));
    op.args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i)) | DNNL_ARG_SRC_1] =
        op.binary.back();
  }
  return op;
}

bool is_f32(const Graph& g, const std::string& t) {
  return g.tensor(t).dtype == DType::F32;
}

// A constant scalar's value, if `t` is one.
std::optional<float> constant_scalar(const Graph& g, const std::string& t) {
  if (t.empty() || !g.is_constant(t)) return std::nullopt;
  const TensorInfo& info = g.tensor(t);
  if (info.data->numel() != 1) return std::nullopt;
  return static_cast<float>(info.data->get_as_double(0));
}

// The epilogue node as a post-op reading `chain` (the running value), or nullopt.
std::optional<PostOp> as_post_op(const Graph& g, const Node& n, const std::string& chain,
                                 const Shape& out_shape, const std::set<std::string>& internal) {
  if (n.outputs.size() != 1 || !is_f32(g, n.outputs[0])) return std::nullopt;
  if (g.tensor(n.outputs[0]).shape != out_shape) return std::nullopt;
  const std::string& op = n.op_type;
  auto eltwise = [](dnnl::algorithm a, float alpha = 0, float beta = 0) {
    return PostOp{PostOp::Kind::Eltwise, a, alpha, beta, {}};
  };
  if (n.inputs.size() == 1 && n.inputs[0] == chain) {
    if (op == "Relu") return eltwise(dnnl::algorithm::eltwise_relu);
    if (op == "Sigmoid") return eltwise(dnnl::algorithm::eltwise_logistic);
    if (op == "Tanh") return eltwise(dnnl::algorithm::eltwise_tanh);
  }
  if (op == "Clip" && !n.inputs.empty() && n.inputs[0] == chain) {
    const auto lo = n.has_input(1) ? constant_scalar(g, n.inputs[1]) : std::optional<float>(-3e38f);
    const auto hi = n.has_input(2) ? constant_scalar(g, n.inputs[2]) : std::optional<float>(3e38f);
    if (lo && hi) return eltwise(dnnl::algorithm::eltwise_clip_v2, *lo, *hi);
    return std::nullopt;
  }
  if (n.inputs.size() != 2) return std::nullopt;
  const bool first = n.inputs[0] == chain;
  const bool second = n.inputs[1] == chain;
  if (first == second) return std::nullopt;
  const std::string& other = first ? n.inputs[1] : n.inputs[0];
  if (internal.count(other) || !is_f32(g, other)) return std::nullopt;
  if (!broadcasts_to(g.tensor(other).shape, out_shape)) return std::nullopt;
  if (g.tensor(other).shape.size() > out_shape.size()) return std::nullopt;
  dnnl::algorithm a;
  if (op == "Add") {
    a = dnnl::algorithm::binary_add;
  } else if (op == "Mul") {
    a = dnnl::algorithm::binary_mul;
  } else if (op == "Sub" && first) {
    a = dnnl::algorithm::binary_sub;
  } else if (op == "Div" && first) {
    a = dnnl::algorithm::binary_div;
  } else if ((op == "Max" || op == "Min") && constant_scalar(g, other)) {
    const float c = *constant_scalar(g, other);
    return op == "Max" ? eltwise(dnnl::algorithm::eltwise_clip_v2, c, 3e38f)
                       : eltwise(dnnl::algorithm::eltwise_clip_v2, -3e38f, c);
  } else {
    return std::nullopt;
  }
  return PostOp{PostOp::Kind::Binary, a, 0, 0, other};
}

}  // namespace

struct PlanExecutor::Impl {
  const Graph& graph;
  const Plan& plan;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::byte* arena = nullptr;
  std::byte* scratch = nullptr;  // one pool every kernel's intermediates share
  std::unordered_map<std::string, std::int64_t> arena_offset;
  std::vector<const std::byte*> input_ptrs;  // bound per execute()
  std::unordered_map<std::string, std::size_t> input_index;
  std::vector<std::pair<std::string, Location>> output_locations;
  PlanExecutorStats stats;

  // A linear primitive on oneDNN, epilogue folded in as post-ops.
  struct LinearStage {
    LinearOp op;
    Location a, b, y;
    std::vector<Location> extra;
    std::vector<const void*> extra_ptrs;  // reused every run
  };
  struct LoopStage {
    std::unique_ptr<FusedLoop> loop;
    std::vector<Location> reads, writes;
    std::vector<const std::byte*> read_ptrs;
    std::vector<std::byte*> write_ptrs;
  };
  // One primitive on its reference kernel, reading and writing views in place.
  struct ReferenceStage {
    const Node* node = nullptr;
    ReferenceKernel kernel = nullptr;
    std::vector<Tensor> in_views, out_views;
    std::vector<const Tensor*> ins;                     // per node input: view, constant or null
    std::vector<Location> in_locations, out_locations;  // per view
    std::vector<const Tensor*> in_constants;            // per node input
    std::vector<std::pair<std::size_t, std::size_t>> rebound;  // in_views[i] <- input k
  };
  struct Stage {
    std::optional<LinearStage> linear;
    std::optional<LoopStage> loop;
    std::optional<ReferenceStage> reference;
  };
  std::vector<std::vector<Stage>> kernels;
  std::int64_t scratch_peak = 0;

  Impl(const Graph& g, const Plan& p, const std::map<std::string, std::string>& alternatives)
      : graph(g), plan(p) {
    stats.kernels = p.kernels.size();
    stats.arena_bytes = p.arena_bytes;
    for (const auto& w : g.weights()) {
      stats.weight_bytes += static_cast<std::int64_t>(g.tensor(w).data->nbytes());
    }
    arena = static_cast<std::byte*>(
        std::aligned_alloc(64, static_cast<std::size_t>((p.arena_bytes + 63) / 64 * 64 + 64)));
    for (const auto& s : p.arena) arena_offset[s.tensor] = s.offset;
    for (std::size_t i = 0; i < g.inputs.size(); ++i) input_index[g.inputs[i]] = i;
    input_ptrs.assign(g.inputs.size(), nullptr);
    for (const auto& out : g.outputs) {
      std::optional<Location> loc = locate_or_none(out);
      if (!loc) {
        for (const auto& [alt, main] : alternatives) {
          if (main == out && arena_offset.count(alt)) loc = locate(alt);
        }
      }
      if (!loc) fail("plan executor: graph output '{}' has no location in the plan", out);
      output_locations.emplace_back(out, *loc);
    }
    // Scratch offsets are known per kernel before the pool exists: compile against a
    // null base, then bind every scratch location once the pool is allocated.
    for (const auto& pk : p.kernels) kernels.push_back(compile(pk));
    scratch = static_cast<std::byte*>(
        std::aligned_alloc(64, static_cast<std::size_t>((scratch_peak + 63) / 64 * 64 + 64)));
    stats.scratch_bytes = scratch_peak;
    for (auto& stages : kernels) {
      for (auto& st : stages) {
        if (st.reference) bind_views(*st.reference);
      }
    }
  }
  ~Impl() {
    std::free(arena);
    std::free(scratch);
  }

  std::optional<Location> locate_or_none(const std::string& t) const {
    Location l;
    if (graph.is_constant(t)) {
      l.kind = Location::Kind::Constant;
      l.constant = graph.tensor(t).data.get();
      return l;
    }
    if (auto it = input_index.find(t); it != input_index.end()) {
      l.kind = Location::Kind::Input;
      l.input = it->second;
      return l;
    }
    if (auto it = arena_offset.find(t); it != arena_offset.end()) {
      l.offset = it->second;
      return l;
    }
    return std::nullopt;
  }
  Location locate(const std::string& t) const {
    auto l = locate_or_none(t);
    if (!l) fail("plan executor: tensor '{}' is neither an input, a weight nor in the arena", t);
    return *l;
  }
  const std::byte* address(const Location& l) const {
    switch (l.kind) {
      case Location::Kind::Constant:
        return l.constant->raw();
      case Location::Kind::Input:
        return input_ptrs[l.input];
      case Location::Kind::Scratch:
        return scratch + l.offset;
      case Location::Kind::Arena:
        break;
    }
    return arena + l.offset;
  }
  std::byte* mutable_address(const Location& l) const {
    if (l.kind == Location::Kind::Scratch) return scratch + l.offset;
    if (l.kind != Location::Kind::Arena)
      fail("plan executor: writing a tensor that is not an activation");
    return arena + l.offset;
  }

  // Where each tensor of one kernel lives while compiling it.
  struct KernelLayout {
    std::unordered_map<std::string, Location> where;
    std::int64_t scratch_used = 0;
  };

  Location place(KernelLayout& layout, const std::string& t) {
    if (auto it = layout.where.find(t); it != layout.where.end()) return it->second;
    if (auto known = locate_or_none(t)) {  // a weight, graph input or kernel output
      layout.where[t] = *known;
      return *known;
    }
    Location l;
    l.kind = Location::Kind::Scratch;
    l.offset = layout.scratch_used;
    layout.scratch_used += (tensor_bytes(graph, t) + 63) / 64 * 64;
    scratch_peak = std::max(scratch_peak, layout.scratch_used);
    layout.where[t] = l;
    return l;
  }

  // The tensors produced by nodes[begin, end) that a later node of the kernel or
  // something outside the kernel reads.
  std::set<std::string> needed_after(const PlannedKernel& pk, std::size_t begin,
                                     std::size_t end) const {
    std::set<std::string> produced, needed;
    for (std::size_t i = begin; i < end; ++i) {
      for (const auto& o : graph.nodes[pk.nodes[i]].outputs) produced.insert(o);
    }
    for (std::size_t i = 0; i < pk.nodes.size(); ++i) {
      if (i >= begin && i < end) continue;
      for (const auto& t : graph.nodes[pk.nodes[i]].inputs) {
        if (produced.count(t)) needed.insert(t);
      }
    }
    for (const auto& t : pk.outputs) {
      if (produced.count(t)) needed.insert(t);
    }
    return needed;
  }

  // A linear node at `pos` with the elementwise epilogue that follows it; returns the
  // stage and how many nodes it covers, or nullopt.
  std::optional<std::pair<LinearStage, std::size_t>> linear_stage(const PlannedKernel& pk,
                                                                  std::size_t pos,
                                                                  KernelLayout& layout) {
    const Node& lin = graph.nodes[pk.nodes[pos]];
    if (lin.op_type != "MatMul" && lin.op_type != "Conv") return std::nullopt;
    for (const auto& t : lin.inputs) {
      if (graph.tensor(t).shape.size() < 2) return std::nullopt;
    }
    std::set<std::string> internal;
    std::vector<PostOp> post_ops;
    std::string chain = lin.outputs[0];
    const Shape& out_shape = graph.tensor(chain).shape;
    std::size_t end = pos + 1;
    for (; end < pk.nodes.size(); ++end) {
      // The running value must feed only the next node and stay inside the kernel.
      const std::set<std::string> needed = needed_after(pk, pos, end);
      if (needed.size() != 1 || !needed.count(chain)) break;
      if (std::find(pk.outputs.begin(), pk.outputs.end(), chain) != pk.outputs.end()) break;
      const Node& n = graph.nodes[pk.nodes[end]];
      std::size_t readers = 0;
      for (std::size_t i = end; i < pk.nodes.size(); ++i) {
        for (const auto& t : graph.nodes[pk.nodes[i]].inputs) readers += t == chain;
      }
      if (readers != 1) break;
      internal.insert(chain);
      auto po = as_post_op(graph, n, chain, out_shape, internal);
      if (!po) break;
      post_ops.push_back(*po);
      chain = n.outputs[0];
    }
    auto op = make_linear(engine, graph, lin, post_ops);
    if (!op) return std::nullopt;
    LinearStage st{std::move(*op),
                   place(layout, lin.inputs[0]),
                   place(layout, lin.inputs[1]),
                   place(layout, chain),
                   {},
                   {}};
    for (const auto& p : post_ops) {
      if (p.kind == PostOp::Kind::Binary) st.extra.push_back(place(layout, p.operand));
    }
    st.extra_ptrs.resize(st.extra.size());
    return std::make_pair(std::move(st), end - pos);
  }

  std::optional<LoopStage> loop_stage(const PlannedKernel& pk, std::size_t begin, std::size_t end,
                                      KernelLayout& layout) {
    const std::vector<std::size_t> nodes(pk.nodes.begin() + static_cast<std::ptrdiff_t>(begin),
                                         pk.nodes.begin() + static_cast<std::ptrdiff_t>(end));
    std::string why;
    auto loop = FusedLoop::compile(graph, nodes, needed_after(pk, begin, end), &why);
    if (!loop) return std::nullopt;
    LoopStage st;
    for (const auto& t : loop->reads()) st.reads.push_back(place(layout, t));
    for (const auto& t : loop->writes()) st.writes.push_back(place(layout, t));
    st.read_ptrs.resize(st.reads.size());
    st.write_ptrs.resize(st.writes.size());
    stats.loop_scratch_bytes += loop->scratch_bytes();
    st.loop = std::move(loop);
    return st;
  }

  ReferenceStage reference_stage(const Node& n, KernelLayout& layout) {
    ReferenceStage st;
    st.node = &n;
    st.kernel = find_reference_kernel(n.op_type);
    if (!st.kernel) unsupported("{}: no kernel for op type '{}'", n.describe(), n.op_type);
    st.in_views.reserve(n.inputs.size());
    for (const auto& t : n.inputs) {
      if (t.empty()) continue;
      const Location l = place(layout, t);
      if (l.kind == Location::Kind::Constant) continue;
      const TensorInfo& info = graph.tensor(t);
      st.in_views.push_back(Tensor::view(info.dtype, info.shape, nullptr));
      st.in_locations.push_back(l);
    }
    for (const auto& t : n.outputs) {
      const TensorInfo& info = graph.tensor(t);
      st.out_views.push_back(Tensor::view(info.dtype, info.shape, nullptr));
      st.out_locations.push_back(place(layout, t));
    }
    st.in_constants.resize(n.inputs.size(), nullptr);
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      if (!n.inputs[i].empty() && graph.is_constant(n.inputs[i])) {
        st.in_constants[i] = graph.tensor(n.inputs[i]).data.get();
      }
    }
    return st;
  }

  // Points the reference stage's views at their memory (arena and scratch are fixed;
  // graph inputs are rebound per execute()).
  void bind_views(ReferenceStage& st) {
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
        st.in_views[v].rebind(const_cast<std::byte*>(address(l)));
      } else {
        st.rebound.emplace_back(v, l.input);
      }
      st.ins[i] = &st.in_views[v];
      ++v;
    }
    for (std::size_t o = 0; o < st.out_views.size(); ++o) {
      st.out_views[o].rebind(mutable_address(st.out_locations[o]));
    }
  }

  std::vector<Stage> compile(const PlannedKernel& pk) {
    KernelLayout layout;
    for (std::size_t i = 0; i < pk.inputs.size(); ++i) {
      layout.where[pk.inputs[i]] = locate(pk.sources[i]);
    }
    std::vector<Stage> stages;
    std::size_t pos = 0;
    const std::size_t count = pk.nodes.size();
    auto is_linear = [&](std::size_t i) {
      return primitive_class(graph.nodes[pk.nodes[i]]) == PrimitiveClass::Linear;
    };
    while (pos < count) {
      if (is_linear(pos)) {
        if (auto st = linear_stage(pk, pos, layout)) {
          stats.dnnl_primitives += 1;
          stats.epilogue_primitives += st->second - 1;
          stages.push_back(Stage{std::move(st->first), std::nullopt, std::nullopt});
          pos += st->second;
          continue;
        }
        ++stats.reference_primitives;
        stages.push_back(
            Stage{std::nullopt, std::nullopt, reference_stage(graph.nodes[pk.nodes[pos]], layout)});
        ++pos;
        continue;
      }
      // The longest run of memory-bound primitives from here that one loop expresses.
      std::size_t run_end = pos;
      while (run_end < count && !is_linear(run_end)) ++run_end;
      bool placed = false;
      for (std::size_t end = run_end; end > pos; --end) {
        if (auto st = loop_stage(pk, pos, end, layout)) {
          stats.fused_loop_primitives += end - pos;
          ++stats.fused_loops;
          stages.push_back(Stage{std::nullopt, std::move(*st), std::nullopt});
          pos = end;
          placed = true;
          break;
        }
      }
      if (placed) continue;
      ++stats.reference_primitives;
      stages.push_back(
          Stage{std::nullopt, std::nullopt, reference_stage(graph.nodes[pk.nodes[pos]], layout)});
      ++pos;
    }
    if (stages.size() == 1 && stages[0].linear) ++stats.fused_linear_kernels;
    if (stages.size() == 1 && stages[0].loop) ++stats.single_loop_kernels;
    return stages;
  }

  void run_stage(Stage& st) {
    if (st.linear) {
      LinearStage& l = *st.linear;
      for (std::size_t i = 0; i < l.extra.size(); ++i) l.extra_ptrs[i] = address(l.extra[i]);
      l.op.run(stream, address(l.a), address(l.b), mutable_address(l.y), l.extra_ptrs);
      stream.wait();
      return;
    }
    if (st.loop) {
      LoopStage& l = *st.loop;
      for (std::size_t i = 0; i < l.reads.size(); ++i) l.read_ptrs[i] = address(l.reads[i]);
      for (std::size_t i = 0; i < l.writes.size(); ++i) {
        l.write_ptrs[i] = mutable_address(l.writes[i]);
      }
      l.loop->run(l.read_ptrs, l.write_ptrs);
      return;
    }
    ReferenceStage& r = *st.reference;
    for (const auto& [view, input] : r.rebound) {
      r.in_views[view].rebind(const_cast<std::byte*>(input_ptrs[input]));
    }
    r.kernel(*r.node, r.ins, r.out_views);
  }

  void execute(const TensorMap& inputs) {
    for (std::size_t i = 0; i < graph.inputs.size(); ++i) {
      auto it = inputs.find(graph.inputs[i]);
      if (it == inputs.end()) fail("plan executor: input '{}' is missing", graph.inputs[i]);
      const TensorInfo& info = graph.tensor(graph.inputs[i]);
      if (it->second.shape() != info.shape || it->second.dtype() != info.dtype) {
        fail("plan executor: input '{}' has the wrong dtype or shape", graph.inputs[i]);
      }
      input_ptrs[i] = it->second.raw();
    }
    for (auto& stages : kernels) {
      for (Stage& st : stages) run_stage(st);
    }
  }

  TensorMap outputs() const {
    TensorMap out;
    for (const auto& [name, loc] : output_locations) {
      const TensorInfo& info = graph.tensor(name);
      Tensor t(info.dtype, info.shape);
      std::memcpy(t.raw(), address(loc), t.nbytes());
      out[name] = std::move(t);
    }
    return out;
  }
};

PlanExecutor::PlanExecutor(const Graph& graph, const Plan& plan,
                           const std::map<std::string, std::string>& alternatives)
    : impl_(std::make_unique<Impl>(graph, plan, alternatives)) {}

PlanExecutor::~PlanExecutor() = default;

void PlanExecutor::execute(const TensorMap& inputs) {
  impl_->execute(inputs);
}

TensorMap PlanExecutor::outputs() const {
  return impl_->outputs();
}

const PlanExecutorStats& PlanExecutor::stats() const {
  return impl_->stats;
}

}  // namespace orchid
