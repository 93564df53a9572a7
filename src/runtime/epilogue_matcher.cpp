#include "runtime/epilogue_matcher.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "runtime/kernel_dataflow.hpp"

namespace orchid {

namespace {

// Bounds meaning "no bound" for oneDNN's clip.
constexpr float kHuge = 3e38f;

bool is_f32(const Graph& g, const std::string& t) {
  return g.tensor(t).dtype == DType::F32;
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

// A constant scalar's value, if `t` is one.
std::optional<float> constant_scalar(const Graph& g, const std::string& t) {
  if (t.empty() || !g.is_constant(t)) return std::nullopt;
  const TensorInfo& info = g.tensor(t);
  if (info.data->numel() != 1) return std::nullopt;
  return static_cast<float>(info.data->get_as_double(0));
}

PostOp eltwise(OnednnAlgorithm a, float alpha = 0, float beta = 0) {
  return PostOp{PostOp::Kind::Eltwise, a, alpha, beta, {}};
}

// Whether `n` only relabels `chain`'s bytes with another shape (a Reshape with a constant
// shape, Flatten, Squeeze, Unsqueeze) into an f32 result.
bool relabels(const Graph& graph, const Node& n, const std::string& chain) {
  if (!keeps_flat_order(n.op_type) || n.inputs.empty() || n.inputs[0] != chain ||
      n.outputs.size() != 1 || !is_f32(graph, n.outputs[0])) {
    return false;
  }
  for (std::size_t k = 1; k < n.inputs.size(); ++k) {
    if (!n.inputs[k].empty() && !graph.is_constant(n.inputs[k])) return false;
  }
  return true;
}

// Whether kernel nodes at .. at + 7 compute 0.5 x (1 + Tanh(c (x + k Pow(x, 3)))) of
// x = `chain` (c = sqrt(2 / pi), k = 0.044715), the last of them giving the result, with
// the halving on x or on the product.
bool gelu_tanh(const Graph& graph, const PlannedKernel& pk, std::size_t at,
               const std::string& chain) {
  if (at + 8 > pk.nodes.size()) return false;
  const Shape& shape = graph.tensor(chain).shape;
  std::map<std::string, const Node*> by_output;
  for (std::size_t k = 0; k < 8; ++k) {
    const Node& n = graph.nodes[pk.nodes[at + k]];
    if (n.outputs.size() != 1 || !is_f32(graph, n.outputs[0]) ||
        graph.tensor(n.outputs[0]).shape != shape) {
      return false;
    }
    by_output[n.outputs[0]] = &n;
  }
  auto near = [&](const std::string& t, double want) {
    const auto v = constant_scalar(graph, t);
    return v && std::fabs(*v - want) <= 1e-4 * std::fabs(want);
  };
  // The node of `op` with two inputs that gives `t`, one of them `a`; its other input.
  auto binary = [&](const std::string& t, const char* op,
                    const std::string& a) -> std::optional<std::string> {
    const auto it = by_output.find(t);
    if (it == by_output.end()) return std::nullopt;
    const Node& n = *it->second;
    if (n.op_type != op || n.inputs.size() != 2) return std::nullopt;
    if (n.inputs[0] == a) return n.inputs[1];
    if (n.inputs[1] == a) return n.inputs[0];
    return std::nullopt;
  };
  // Which operand of a two-input node of `op` giving `t` satisfies `pred`; the other.
  auto split = [&](const std::string& t, const char* op,
                   const auto& pred) -> std::optional<std::pair<std::string, std::string>> {
    const auto it = by_output.find(t);
    if (it == by_output.end() || it->second->op_type != op || it->second->inputs.size() != 2) {
      return std::nullopt;
    }
    const auto& in = it->second->inputs;
    if (pred(in[0])) return std::make_pair(in[0], in[1]);
    if (pred(in[1])) return std::make_pair(in[1], in[0]);
    return std::nullopt;
  };
  const std::string& last = graph.nodes[pk.nodes[at + 7]].outputs[0];
  // 1 + Tanh(...): the factor that holds the Tanh.
  auto is_one_plus_tanh = [&](const std::string& t) {
    const auto tanh_out = split(t, "Add", [&](const std::string& u) {
      const auto it = by_output.find(u);
      return it != by_output.end() && it->second->op_type == "Tanh";
    });
    if (!tanh_out || !near(tanh_out->second, 1.0)) return false;
    const Node& th = *by_output.at(tanh_out->first);
    if (th.inputs.size() != 1) return false;
    const auto inner =
        split(th.inputs[0], "Mul", [&](const std::string& u) { return by_output.count(u) > 0; });
    if (!inner || !near(inner->second, 0.7978845608028654)) return false;
    const auto cubic = binary(inner->first, "Add", chain);
    if (!cubic) return false;
    const auto pow_out =
        split(*cubic, "Mul", [&](const std::string& u) { return by_output.count(u) > 0; });
    if (!pow_out || !near(pow_out->second, 0.044715)) return false;
    const auto three = binary(pow_out->first, "Pow", chain);
    return three && by_output.at(pow_out->first)->inputs[0] == chain && near(*three, 3.0);
  };
  // (0.5 x) * (1 + tanh) or (x * (1 + tanh)) * 0.5.
  if (const auto f = split(last, "Mul", is_one_plus_tanh)) {
    const auto half = binary(f->second, "Mul", chain);
    return half && near(*half, 0.5);
  }
  const auto halved = split(last, "Mul", [&](const std::string& u) { return near(u, 0.5); });
  if (!halved) return false;
  const auto f = binary(halved->second, "Mul", chain);
  return f && is_one_plus_tanh(*f);
}

// An activation that fission spelled as several primitives, starting at kernel node `at`
// and reading `chain`, as one eltwise post-op with the number of nodes it covers. Only
// when the pattern's nodes follow each other in the kernel, `chain` has no other reader
// and no intermediate is needed elsewhere.
std::optional<std::pair<PostOp, std::size_t>> composite_post_op(const Graph& graph,
                                                                const PlannedKernel& pk,
                                                                std::size_t pos, std::size_t at,
                                                                const std::string& chain) {
  auto node = [&](std::size_t k) -> const Node* {
    return at + k < pk.nodes.size() ? &graph.nodes[pk.nodes[at + k]] : nullptr;
  };
  auto is = [&](const Node* n, const char* op, std::size_t inputs) {
    return n && n->op_type == op && n->inputs.size() == inputs && n->outputs.size() == 1 &&
           is_f32(graph, n->outputs[0]) &&
           graph.tensor(n->outputs[0]).shape == graph.tensor(chain).shape;
  };
  auto other_of = [](const Node* n, const std::string& t) -> std::optional<std::string> {
    if (n->inputs[0] == t) return n->inputs[1];
    if (n->inputs[1] == t) return n->inputs[0];
    return std::nullopt;
  };
  auto scalar_near = [&](const std::string& t, double want) {
    const auto v = constant_scalar(graph, t);
    return v && std::fabs(*v - want) <= 1e-4 * std::fabs(want);
  };
  // Accepts the pattern if it covers `count` nodes and only its last output is needed
  // after it, and `chain` is read `chain_reads` times, all inside it.
  auto accept = [&](std::size_t count, std::size_t chain_reads) {
    const std::set<std::string> needed = needed_after(graph, pk, pos, at + count);
    const std::string& last = graph.nodes[pk.nodes[at + count - 1]].outputs[0];
    return needed.size() == 1 && needed.count(last) &&
           readers_from(graph, pk, at, chain) == chain_reads;
  };
  const Node* n0 = node(0);
  const Node* n1 = node(1);
  if (is(n0, "Sigmoid", 1) && n0->inputs[0] == chain && is(n1, "Mul", 2) &&
      other_of(n1, chain) == n0->outputs[0] && accept(2, 2)) {
    return std::make_pair(eltwise(OnednnAlgorithm::EltwiseSwish, 1.0f), std::size_t{2});
  }
  // gelu, tanh form (GPT-2, ALBERT: Hugging Face's gelu_new):
  // 0.5 x (1 + Tanh(sqrt(2 / pi) (x + 0.044715 Pow(x, 3)))), its eight nodes in any
  // order the kernel has them.
  if (gelu_tanh(graph, pk, at, chain) && accept(8, 3)) {
    return std::make_pair(eltwise(OnednnAlgorithm::EltwiseGeluTanh, 0.0f), std::size_t{8});
  }
  const Node* n2 = node(2);
  const Node* n3 = node(3);
  const Node* n4 = node(4);
  if (!(n0 && n0->inputs.size() == 2 && n0->inputs[0] == chain)) return std::nullopt;
  // hardswish (oneDNN's, with alpha 1/6 and beta 0.5 fixed): Mul 1/6 -> Add 0.5 ->
  // Clip [0, 1] -> Mul by x
  if (is(n0, "Mul", 2) && scalar_near(n0->inputs[1], 1.0 / 6.0) && is(n1, "Add", 2) &&
      other_of(n1, n0->outputs[0]) && scalar_near(*other_of(n1, n0->outputs[0]), 0.5) &&
      is(n2, "Clip", 3) && n2->inputs[0] == n1->outputs[0] && scalar_near(n2->inputs[2], 1.0) &&
      constant_scalar(graph, n2->inputs[1]) == 0.0f && is(n3, "Mul", 2) &&
      other_of(n3, chain) == n2->outputs[0] && accept(4, 2)) {
    return std::make_pair(eltwise(OnednnAlgorithm::EltwiseHardSwish), std::size_t{4});
  }
  // gelu: scale -> Erf -> Add 1 -> Mul by x -> Mul 0.5
  const bool scaled = (is(n0, "Div", 2) && scalar_near(n0->inputs[1], std::sqrt(2.0))) ||
                      (is(n0, "Mul", 2) && scalar_near(n0->inputs[1], 1.0 / std::sqrt(2.0)));
  if (!scaled || !is(n1, "Erf", 1) || n1->inputs[0] != n0->outputs[0]) return std::nullopt;
  if (!is(n2, "Add", 2)) return std::nullopt;
  const auto one = other_of(n2, n1->outputs[0]);
  if (!one || !scalar_near(*one, 1.0)) return std::nullopt;
  if (!is(n3, "Mul", 2) || other_of(n3, chain) != n2->outputs[0]) return std::nullopt;
  if (!is(n4, "Mul", 2)) return std::nullopt;
  const auto half = other_of(n4, n3->outputs[0]);
  if (!half || !scalar_near(*half, 0.5) || !accept(5, 2)) return std::nullopt;
  return std::make_pair(eltwise(OnednnAlgorithm::EltwiseGeluErf, 0.0f), std::size_t{5});
}

}  // namespace

Refusable<PostOp> as_post_op(const Graph& g, const Node& n, const std::string& chain,
                             const Shape& out_shape, const std::set<std::string>& internal) {
  if (n.outputs.size() != 1 || !is_f32(g, n.outputs[0])) {
    return refusal("{}: not one f32 result", n.describe());
  }
  if (g.tensor(n.outputs[0]).shape != out_shape) {
    return refusal("{}: its result is not the linear op's shape", n.describe());
  }
  const OnednnAlgorithm a = op_traits(n.op_type).onednn;
  switch (a) {
    case OnednnAlgorithm::EltwiseRelu:
    case OnednnAlgorithm::EltwiseLogistic:
    case OnednnAlgorithm::EltwiseTanh:
      if (n.inputs.size() == 1 && n.inputs[0] == chain) return eltwise(a);
      return refusal("{}: does not read the chain alone", n.describe());
    case OnednnAlgorithm::EltwiseClip: {
      if (n.inputs.empty() || n.inputs[0] != chain) {
        return refusal("{}: does not clip the chain", n.describe());
      }
      const auto lo = n.has_input(1) ? constant_scalar(g, n.inputs[1]) : std::optional(-kHuge);
      const auto hi = n.has_input(2) ? constant_scalar(g, n.inputs[2]) : std::optional(kHuge);
      if (lo && hi) return eltwise(OnednnAlgorithm::EltwiseClip, *lo, *hi);
      return refusal("{}: bounds are not constant scalars", n.describe());
    }
    case OnednnAlgorithm::BinaryAdd:
    case OnednnAlgorithm::BinaryMul:
    case OnednnAlgorithm::BinarySub:
    case OnednnAlgorithm::BinaryDiv:
    case OnednnAlgorithm::BinaryMax:
    case OnednnAlgorithm::BinaryMin:
      break;
    default:
      return refusal("{}: op {} has no oneDNN post-op", n.describe(), n.op_type);
  }
  if (n.inputs.size() != 2) return refusal("{}: not two inputs", n.describe());
  const bool first = n.inputs[0] == chain;
  const bool second = n.inputs[1] == chain;
  if (first == second) return refusal("{}: reads the chain {} times", n.describe(), first ? 2 : 0);
  const std::string& other = first ? n.inputs[1] : n.inputs[0];
  if (internal.count(other)) return refusal("{}: its operand is inside the chain", n.describe());
  if (!is_f32(g, other)) return refusal("{}: operand '{}' is not f32", n.describe(), other);
  if (!broadcasts_to(g.tensor(other).shape, out_shape) ||
      g.tensor(other).shape.size() > out_shape.size()) {
    return refusal("{}: operand '{}' does not broadcast to the result", n.describe(), other);
  }
  switch (a) {
    case OnednnAlgorithm::BinarySub:
    case OnednnAlgorithm::BinaryDiv:
      // oneDNN computes chain - operand and chain / operand only.
      if (!first) return refusal("{}: the chain is the right operand", n.describe());
      break;
    case OnednnAlgorithm::BinaryMax:
    case OnednnAlgorithm::BinaryMin: {
      // Against a constant scalar: a one-sided clip.
      const auto c = constant_scalar(g, other);
      if (!c) return refusal("{}: operand '{}' is not a constant scalar", n.describe(), other);
      return a == OnednnAlgorithm::BinaryMax ? eltwise(OnednnAlgorithm::EltwiseClip, *c, kHuge)
                                             : eltwise(OnednnAlgorithm::EltwiseClip, -kHuge, *c);
    }
    default:
      break;
  }
  return PostOp{PostOp::Kind::Binary, a, 0, 0, other};
}

EpilogueMatch match_epilogue(const Graph& graph, const PlannedKernel& pk, std::size_t pos) {
  EpilogueMatch m;
  const Node& lin = graph.nodes[pk.nodes[pos]];
  const bool matmul = op_traits(lin.op_type).onednn == OnednnAlgorithm::MatMul;
  std::set<std::string> internal;
  std::string chain = lin.outputs[0];
  bool relabelled = false;  // a Reshape passed: operands must be scalars from there on
  // `n` reading `chain` as a post-op on the chain's current shape (after a Reshape only
  // with a scalar operand, which broadcasts alike in either shape).
  auto post_op_of = [&](const Node& n, const std::string& value,
                        const std::set<std::string>& inside) -> Refusable<PostOp> {
    auto po = as_post_op(graph, n, value, graph.tensor(value).shape, inside);
    if (po && relabelled && po->kind == PostOp::Kind::Binary &&
        shape_numel(graph.tensor(po->operand).shape) != 1) {
      return refusal("{}: its operand is not a scalar after a Reshape", n.describe());
    }
    return po;
  };
  std::size_t end = pos + 1;
  while (end < pk.nodes.size()) {
    // The running value must feed only the next node(s) and stay inside the kernel.
    const std::set<std::string> needed = needed_after(graph, pk, pos, end);
    if (needed.size() != 1 || !needed.count(chain)) {
      m.stopped = "'" + chain + "' is not the only value needed after the chain";
      break;
    }
    if (std::find(pk.outputs.begin(), pk.outputs.end(), chain) != pk.outputs.end()) {
      m.stopped = "'" + chain + "' leaves the kernel";
      break;
    }
    if (auto composite = composite_post_op(graph, pk, pos, end, chain)) {
      m.post_ops.push_back(composite->first);
      internal.insert(chain);
      chain = graph.nodes[pk.nodes[end + composite->second - 1]].outputs[0];
      end += composite->second;
      continue;
    }
    const Node& n = graph.nodes[pk.nodes[end]];
    if (readers_from(graph, pk, end, chain) != 1) {
      m.stopped = "'" + chain + "' has several readers";
      break;
    }
    internal.insert(chain);
    // A MatMul's result reshaped between it and its activation (GPT-2's Gemm, Reshape,
    // then tanh-GELU): the same bytes under another shape, passed where a post-op follows.
    if (matmul && relabels(graph, n, chain)) {
      // The run of relabellings from here (a Gemm's own Reshape, then the model's), each
      // read once, and what follows them.
      std::size_t after = end;
      std::string next = chain;
      std::set<std::string> inside = internal;
      while (after < pk.nodes.size() && relabels(graph, graph.nodes[pk.nodes[after]], next) &&
             (after == end || readers_from(graph, pk, after, next) == 1) &&
             std::find(pk.outputs.begin(), pk.outputs.end(), next) == pk.outputs.end()) {
        inside.insert(next);
        next = graph.nodes[pk.nodes[after]].outputs[0];
        ++after;
      }
      bool follows = false;
      if (after < pk.nodes.size() &&
          std::find(pk.outputs.begin(), pk.outputs.end(), next) == pk.outputs.end()) {
        const bool saved = relabelled;
        relabelled = true;
        follows = composite_post_op(graph, pk, pos, after, next).has_value();
        if (!follows && readers_from(graph, pk, after, next) == 1) {
          std::set<std::string> with_next = inside;
          with_next.insert(next);
          follows = static_cast<bool>(post_op_of(graph.nodes[pk.nodes[after]], next, with_next));
        }
        relabelled = saved || follows;
      }
      if (follows) {
        internal = std::move(inside);
        chain = next;
        m.reshapes += after - end;
        end = after;
        continue;
      }
    }
    auto po = post_op_of(n, chain, internal);
    if (!po) {
      m.stopped = po.why();
      break;
    }
    m.post_ops.push_back(*po);
    chain = n.outputs[0];
    ++end;
  }
  m.result = chain;
  m.nodes = end - pos;
  return m;
}

}  // namespace orchid
