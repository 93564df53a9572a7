#include "passes/affine_folding.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

namespace orchid {

namespace {

enum class LinearKind { None, Conv, Gemm, MatMul };

// Which linear op `n` is, when its weights (and bias) are constant f32 tensors it can
// take folded copies of.
LinearKind linear_kind(const Graph& g, const Node& n) {
  if (n.outputs.size() != 1 || !n.has_input(0) || !n.has_input(1)) return LinearKind::None;
  const std::string& w = n.inputs[1];
  if (!g.is_constant(w) || g.tensor(w).dtype != DType::F32) return LinearKind::None;
  if (g.tensor(n.outputs[0]).dtype != DType::F32) return LinearKind::None;
  const bool const_bias =
      !n.has_input(2) || (g.is_constant(n.inputs[2]) && g.tensor(n.inputs[2]).dtype == DType::F32);
  if (n.op_type == "Conv" && const_bias && g.tensor(w).shape.size() >= 3) return LinearKind::Conv;
  if (n.op_type == "Gemm" && const_bias && g.tensor(w).shape.size() == 2) {
    return LinearKind::Gemm;
  }
  if (n.op_type == "MatMul" && g.tensor(w).shape.size() == 2 &&
      g.tensor(n.outputs[0]).shape.size() >= 2) {
    return LinearKind::MatMul;
  }
  return LinearKind::None;
}

// y = x * scale + shift per channel.
struct Affine {
  std::vector<double> scale, shift;
  bool has_shift() const {
    for (double t : shift) {
      if (t != 0.0) return true;
    }
    return false;
  }
};

// The per-channel values of constant `c` broadcast against a result of shape `out` whose
// channels lie on `axis`; nullopt when `c` varies along another axis or would widen `out`.
std::optional<std::vector<double>> channel_values(const Tensor& c, const Shape& out,
                                                  std::size_t axis) {
  if (c.dtype() != DType::F32 || c.shape().size() > out.size()) return std::nullopt;
  const std::size_t offset = out.size() - c.shape().size();
  std::int64_t along = 1;
  for (std::size_t d = 0; d < c.shape().size(); ++d) {
    const std::int64_t n = c.shape()[d];
    if (n == 1) continue;
    if (d + offset != axis || n != out[axis]) return std::nullopt;
    along = n;
  }
  std::vector<double> v(static_cast<std::size_t>(out[axis]));
  const float* p = c.data<float>();
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = p[along == 1 ? 0 : k];
  return v;
}

// The affine map `next` applies to `y` (its only non-constant input), per channel.
std::optional<Affine> affine_of(const Graph& g, const Node& next, const std::string& y,
                                const Shape& out, std::size_t axis) {
  const std::size_t channels = static_cast<std::size_t>(out[axis]);
  Affine a{std::vector<double>(channels, 1.0), std::vector<double>(channels, 0.0)};
  if (next.outputs.size() != 1 || g.tensor(next.outputs[0]).shape != out) return std::nullopt;
  auto constant_input = [&](std::size_t i) -> const Tensor* {
    if (!next.has_input(i) || !g.is_constant(next.inputs[i])) return nullptr;
    return g.tensor(next.inputs[i]).data.get();
  };
  if (next.op_type == "BatchNormalization") {
    if (next.inputs.size() != 5 || next.inputs[0] != y || next.attr_int("training_mode", 0) != 0) {
      return std::nullopt;
    }
    std::vector<std::vector<double>> p;
    for (std::size_t i = 1; i <= 4; ++i) {
      const Tensor* t = constant_input(i);
      if (!t || t->dtype() != DType::F32 || t->shape() != Shape{out[axis]}) return std::nullopt;
      p.emplace_back(t->data<float>(), t->data<float>() + channels);
    }
    const double eps = next.attr_float("epsilon", 1e-5f);
    for (std::size_t k = 0; k < channels; ++k) {
      a.scale[k] = p[0][k] / std::sqrt(p[3][k] + eps);
      a.shift[k] = p[1][k] - p[2][k] * a.scale[k];
    }
    return a;
  }
  if (next.inputs.size() != 2) return std::nullopt;
  const bool y_first = next.inputs[0] == y;
  if (next.inputs[y_first ? 1 : 0] == y) return std::nullopt;  // y op y
  const Tensor* c = constant_input(y_first ? 1 : 0);
  if (!c) return std::nullopt;
  auto v = channel_values(*c, out, axis);
  if (!v) return std::nullopt;
  if (next.op_type == "Mul") {
    a.scale = std::move(*v);
  } else if (next.op_type == "Div" && y_first) {
    for (std::size_t k = 0; k < channels; ++k) a.scale[k] = 1.0 / (*v)[k];
  } else if (next.op_type == "Add") {
    a.shift = std::move(*v);
  } else if (next.op_type == "Sub" && y_first) {
    for (std::size_t k = 0; k < channels; ++k) a.shift[k] = -(*v)[k];
  } else {
    return std::nullopt;
  }
  return a;
}

// `w` with every slice along `axis` scaled by its channel's factor (axis 0: rows of a
// Conv's [M, ...] weights; axis 1: columns of [K, N]).
Tensor scaled(const Tensor& w, const std::vector<double>& s, std::size_t axis) {
  Tensor out(DType::F32, w.shape());
  const float* src = w.data<float>();
  float* dst = out.data<float>();
  const std::int64_t n = w.numel();
  const std::int64_t inner = axis == 0 ? n / w.shape()[0] : 1;
  const std::int64_t period = axis == 0 ? n : w.shape()[1];
  for (std::int64_t i = 0; i < n; ++i) {
    const std::size_t k = static_cast<std::size_t>(axis == 0 ? i / inner : i % period);
    dst[i] = static_cast<float>(src[i] * s[k]);
  }
  return out;
}

// Gemm's C as one value per output column (nullopt for a full [M, N] C).
std::optional<std::vector<double>> gemm_bias(const Graph& g, const Node& n, std::int64_t cols) {
  std::vector<double> b(static_cast<std::size_t>(cols), 0.0);
  if (!n.has_input(2)) return b;
  const Tensor& c = *g.tensor(n.inputs[2]).data;
  auto v = channel_values(c, Shape{1, cols}, 1);
  if (!v) return std::nullopt;
  const double beta = n.attr_float("beta", 1.0f);
  for (std::size_t k = 0; k < b.size(); ++k) b[k] = beta * (*v)[k];
  return b;
}

// Drops a weight nothing reads any more at once, rather than when the pass ends, so a
// model's folded weights are not all held twice at the peak.
void drop_if_unused(Graph& g, const std::string& t) {
  if (std::find(g.outputs.begin(), g.outputs.end(), t) != g.outputs.end()) return;
  for (const Node& n : g.nodes) {
    // A branch or loop body may read it by name from the enclosing graph.
    if (!n.subgraphs.empty()) return;
    if (std::find(n.inputs.begin(), n.inputs.end(), t) != n.inputs.end()) return;
  }
  g.erase_tensor(t);
}

// Weights scaled once per (original, axis, scale): ALBERT's twelve layers share one set
// of weights and each scales it alike, which gave twelve folded copies of each (3 GiB of
// query/key/value weights packed instead of 256 MiB).
using FoldedWeights =
    std::map<std::tuple<std::string, std::size_t, std::vector<double>>, std::string>;

// Rewrites `lin`'s weights (and bias) so that it computes `a` of its old result; false
// when this op cannot take `a` (a MatMul has no bias, a Gemm with a full-size C).
bool fold(Graph& g, Node& lin, LinearKind kind, const Affine& a, FoldedWeights& folded) {
  const Tensor& w = *g.tensor(lin.inputs[1]).data;
  const std::size_t channels = a.scale.size();
  if (kind == LinearKind::MatMul && a.has_shift()) return false;
  std::optional<std::vector<double>> bias;
  if (kind == LinearKind::Gemm) {
    bias = gemm_bias(g, lin, static_cast<std::int64_t>(channels));
    if (!bias) return false;
  } else if (kind == LinearKind::Conv) {
    bias = std::vector<double>(channels, 0.0);
    if (lin.has_input(2)) {
      const Tensor& b = *g.tensor(lin.inputs[2]).data;
      if (b.numel() != static_cast<std::int64_t>(channels)) return false;
      for (std::size_t k = 0; k < channels; ++k) (*bias)[k] = b.data<float>()[k];
    }
  }
  const bool trans_b = kind == LinearKind::Gemm && lin.attr_int("transB", 0) != 0;
  const std::size_t w_axis = kind == LinearKind::Conv || trans_b ? 0 : 1;
  if (w.shape()[w_axis] != static_cast<std::int64_t>(channels)) return false;
  const std::string old_w = lin.inputs[1];
  auto [same, fresh] = folded.try_emplace({old_w, w_axis, a.scale}, std::string());
  if (fresh) {
    same->second = g.fresh_tensor_name(old_w + "_folded");
    g.set_constant(same->second, scaled(w, a.scale, w_axis));
  }
  lin.inputs[1] = same->second;
  drop_if_unused(g, old_w);
  if (!bias) return true;
  const bool had_bias = lin.has_input(2);
  if (!had_bias && !a.has_shift()) return true;
  std::vector<float> b(channels);
  for (std::size_t k = 0; k < channels; ++k) {
    b[k] = static_cast<float>((*bias)[k] * a.scale[k] + a.shift[k]);
  }
  const std::string b_name = g.fresh_tensor_name((had_bias           ? lin.inputs[2]
                                                  : lin.name.empty() ? lin.outputs[0]
                                                                     : lin.name) +
                                                 "_bias");
  g.set_constant(b_name, Tensor::from_vector<float>({static_cast<std::int64_t>(channels)}, b));
  lin.inputs.resize(3);
  lin.inputs[2] = b_name;
  if (kind == LinearKind::Gemm) lin.attributes["beta"] = 1.0f;
  return true;
}

}  // namespace

AffineFoldingStats fold_affine_into_linear(Graph& graph) {
  AffineFoldingStats stats;
  FoldedWeights folded;
  bool changed = true;
  while (changed) {
    changed = false;
    const auto consumers = graph.consumers();
    const std::set<std::string> outputs(graph.outputs.begin(), graph.outputs.end());
    for (std::size_t i = 0; i < graph.nodes.size() && !changed; ++i) {
      const LinearKind kind = linear_kind(graph, graph.nodes[i]);
      if (kind == LinearKind::None) continue;
      const std::string y = graph.nodes[i].outputs[0];
      auto it = consumers.find(y);
      if (outputs.count(y) || it == consumers.end() || it->second.size() != 1) continue;
      const std::size_t next_index = it->second[0];
      const Node& next = graph.nodes[next_index];
      const Shape& out = graph.tensor(y).shape;
      if (out.size() < 2) continue;
      const std::size_t axis = kind == LinearKind::Conv ? 1 : out.size() - 1;
      const std::optional<Affine> a = affine_of(graph, next, y, out, axis);
      if (!a || !fold(graph, graph.nodes[i], kind, *a, folded)) continue;
      graph.nodes[i].outputs[0] = next.outputs[0];
      graph.nodes.erase(graph.nodes.begin() + static_cast<std::ptrdiff_t>(next_index));
      ++stats.folded_nodes;
      changed = true;
    }
  }
  if (stats.folded_nodes > 0) graph.remove_dead_nodes();
  return stats;
}

}  // namespace orchid
