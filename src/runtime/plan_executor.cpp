#include "runtime/plan_executor.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <unordered_map>

#include "fission/primitive.hpp"
#include "ir/ops/window_geometry.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

using dnnl::memory;

// Where a tensor a kernel reads lives.
struct Location {
  enum class Kind { Arena, Input, Constant } kind = Kind::Arena;
  std::int64_t offset = 0;  // Arena
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
  std::unordered_map<std::string, std::int64_t> arena_offset;
  std::vector<const std::byte*> input_ptrs;  // bound per execute()
  std::unordered_map<std::string, std::size_t> input_index;
  std::vector<std::pair<std::string, Location>> output_locations;
  PlanExecutorStats stats;

  // A kernel that is one oneDNN primitive reading and writing the arena directly.
  struct Fused {
    LinearOp op;
    Location a, b;
    std::vector<Location> extra;
    std::int64_t out_offset = 0;
  };
  // Any other kernel: inputs staged into scratch tensors, then its primitives in order.
  struct Step {
    std::size_t node = 0;
    std::vector<std::size_t> in;   // local slots
    std::vector<std::size_t> out;  // local slots
    std::optional<LinearOp> linear;
  };
  struct Generic {
    std::vector<Tensor> locals;        // scratch: staged inputs and intermediates
    std::vector<const Tensor*> bound;  // per local: constant tensor or &locals[i]
    std::vector<std::pair<std::size_t, Location>> staged;  // local <- location
    std::vector<Step> steps;
    std::vector<std::pair<std::size_t, std::int64_t>> writes;  // local -> arena offset
  };
  struct Kernel {
    std::optional<Fused> fused;
    std::optional<Generic> generic;
  };
  std::vector<Kernel> kernels;

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
    for (const auto& pk : p.kernels) kernels.push_back(compile(pk));
  }
  ~Impl() { std::free(arena); }

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
      case Location::Kind::Arena:
        break;
    }
    return arena + l.offset;
  }
  std::string source_of(const PlannedKernel& pk, const std::string& t) const {
    for (std::size_t i = 0; i < pk.inputs.size(); ++i) {
      if (pk.inputs[i] == t) return pk.sources[i];
    }
    return t;
  }

  std::optional<Fused> try_fuse(const PlannedKernel& pk) {
    const Node& lin = graph.nodes[pk.nodes.front()];
    if (lin.op_type != "MatMul" && lin.op_type != "Conv") return std::nullopt;
    if (pk.outputs.size() != 1) return std::nullopt;
    for (const auto& t : lin.inputs) {
      if (graph.tensor(t).shape.size() < 2) return std::nullopt;
    }
    std::set<std::string> internal;
    std::vector<PostOp> post_ops;
    std::string chain = lin.outputs[0];
    const Shape& out_shape = graph.tensor(chain).shape;
    for (std::size_t i = 1; i < pk.nodes.size(); ++i) {
      internal.insert(chain);
      const Node& n = graph.nodes[pk.nodes[i]];
      auto po = as_post_op(graph, n, chain, out_shape, internal);
      if (!po) return std::nullopt;
      post_ops.push_back(*po);
      chain = n.outputs[0];
    }
    if (chain != pk.outputs[0]) return std::nullopt;
    for (const auto& t : lin.inputs) {
      if (std::find(pk.inputs.begin(), pk.inputs.end(), t) == pk.inputs.end()) {
        return std::nullopt;  // fed by a prologue
      }
    }
    auto op = make_linear(engine, graph, lin, post_ops);
    if (!op) return std::nullopt;
    Fused f{std::move(*op),
            locate(source_of(pk, lin.inputs[0])),
            locate(source_of(pk, lin.inputs[1])),
            {},
            arena_offset.at(chain)};
    for (const auto& p : post_ops) {
      if (p.kind == PostOp::Kind::Binary) f.extra.push_back(locate(source_of(pk, p.operand)));
    }
    return f;
  }

  Kernel compile(const PlannedKernel& pk) {
    Kernel k;
    if ((k.fused = try_fuse(pk))) {
      ++stats.fused_linear_kernels;
      ++stats.dnnl_primitives;
      return k;
    }
    Generic gen;
    std::unordered_map<std::string, std::size_t> slot;
    auto add_local = [&](const std::string& t, Tensor value, const Tensor* bound) {
      slot[t] = gen.locals.size();
      gen.locals.push_back(std::move(value));
      gen.bound.push_back(bound);
      return gen.locals.size() - 1;
    };
    for (std::size_t i = 0; i < pk.inputs.size(); ++i) {
      const Location l = locate(pk.sources[i]);
      if (l.kind == Location::Kind::Constant) {
        add_local(pk.inputs[i], Tensor(), l.constant);
      } else {
        const TensorInfo& info = graph.tensor(pk.inputs[i]);
        const std::size_t s = add_local(pk.inputs[i], Tensor(info.dtype, info.shape), nullptr);
        gen.staged.emplace_back(s, l);
      }
    }
    for (std::size_t idx : pk.nodes) {
      const Node& n = graph.nodes[idx];
      Step step;
      step.node = idx;
      for (const auto& t : n.inputs) {
        if (t.empty()) {
          step.in.push_back(static_cast<std::size_t>(-1));
          continue;
        }
        auto it = slot.find(t);
        if (it == slot.end()) {
          // A constant the kernel's input list leaves out.
          step.in.push_back(add_local(t, Tensor(), locate(t).constant));
        } else {
          step.in.push_back(it->second);
        }
      }
      step.linear = make_linear(engine, graph, n, {});
      for (const auto& t : n.outputs) {
        const TensorInfo& info = graph.tensor(t);
        step.out.push_back(
            add_local(t, step.linear ? Tensor(info.dtype, info.shape) : Tensor(), nullptr));
      }
      if (step.linear) {
        ++stats.dnnl_primitives;
      } else {
        ++stats.reference_primitives;
      }
      gen.steps.push_back(std::move(step));
    }
    for (const auto& t : pk.outputs) gen.writes.emplace_back(slot.at(t), arena_offset.at(t));
    for (std::size_t i = 0; i < gen.locals.size(); ++i) {
      if (!gen.bound[i]) {
        gen.bound[i] = &gen.locals[i];
        const TensorInfo& info = graph.tensor(
            std::find_if(slot.begin(), slot.end(), [&](auto& e) { return e.second == i; })->first);
        stats.scratch_bytes +=
            static_cast<std::int64_t>(dtype_size(info.dtype)) * shape_numel(info.shape);
      }
    }
    k.generic = std::move(gen);
    return k;
  }

  void run_generic(Generic& gen) {
    for (const auto& [s, l] : gen.staged) {
      Tensor& t = gen.locals[s];
      std::memcpy(t.raw(), address(l), t.nbytes());
    }
    std::vector<const Tensor*> ins;
    for (Step& step : gen.steps) {
      const Node& n = graph.nodes[step.node];
      if (step.linear) {
        Tensor& y = gen.locals[step.out[0]];
        step.linear->run(stream, gen.bound[step.in[0]]->raw(), gen.bound[step.in[1]]->raw(),
                         y.raw(), {});
        continue;
      }
      ins.clear();
      for (std::size_t s : step.in) {
        ins.push_back(s == static_cast<std::size_t>(-1) ? nullptr : gen.bound[s]);
      }
      std::vector<Tensor> outs = run_reference_node(graph, n, ins);
      for (std::size_t o = 0; o < outs.size(); ++o) gen.locals[step.out[o]] = std::move(outs[o]);
    }
    for (const auto& [s, offset] : gen.writes) {
      const Tensor& t = *gen.bound[s];
      std::memcpy(arena + offset, t.raw(), t.nbytes());
    }
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
    for (Kernel& k : kernels) {
      if (k.fused) {
        Fused& f = *k.fused;
        std::vector<const void*> extra;
        extra.reserve(f.extra.size());
        for (const auto& l : f.extra) extra.push_back(address(l));
        f.op.run(stream, address(f.a), address(f.b), arena + f.out_offset, extra);
      } else {
        run_generic(*k.generic);
      }
    }
    stream.wait();
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
