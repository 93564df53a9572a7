#include "cost/conv_boundaries.hpp"

#include <algorithm>
#include <set>

namespace orchid {

namespace {

bool is_conv_reading(const Node& n, const std::string& t) {
  return n.op_type == "Conv" && !n.inputs.empty() && n.inputs[0] == t;
}

// An Add of `t` and another full-size activation: a residual the executor can fold into
// the Conv producing the other operand. (An Add of a constant is a bias, which a fused
// loop computes when it is not the Conv's own post-op.)
bool is_residual_add(const Graph& g, const Node& n, const std::string& t) {
  if (n.op_type != "Add" || n.inputs.size() != 2) return false;
  const std::string& other = n.inputs[0] == t ? n.inputs[1] : n.inputs[0];
  return !other.empty() && !g.is_constant(other) && g.tensor(other).shape == g.tensor(t).shape;
}

// Every reader of `t` outside `inside` (or everywhere, with skip_inside false) is a
// Conv reading it as its source, or a residual Add.
bool only_conv_readers(const Graph& g, const std::string& t, const std::set<std::size_t>& inside,
                       bool skip_inside) {
  bool any = false;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (std::find(n.inputs.begin(), n.inputs.end(), t) == n.inputs.end()) continue;
    if (skip_inside && inside.count(i)) continue;
    if (!is_conv_reading(n, t) && !is_residual_add(g, n, t)) return false;
    any = true;
  }
  return any;
}

// `t` ends a convolution's elementwise epilogue (or is a convolution's result).
bool produced_by_conv_chain(const Graph& g, const std::string& t) {
  static const std::set<std::string> epilogue = {"Add",     "Mul",  "Sub", "Div", "Relu", "Clip",
                                                 "Sigmoid", "Tanh", "Max", "Min", "Erf"};
  std::string cur = t;
  for (int step = 0; step < 8; ++step) {
    const Node* producer = nullptr;
    for (const Node& n : g.nodes) {
      if (std::find(n.outputs.begin(), n.outputs.end(), cur) != n.outputs.end()) producer = &n;
    }
    if (!producer) return false;
    if (producer->op_type == "Conv") return true;
    if (!epilogue.count(producer->op_type)) return false;
    std::string next;
    for (const auto& in : producer->inputs) {
      if (!in.empty() && !g.is_constant(in)) {
        next = in;
        break;
      }
    }
    if (next.empty()) return false;
    cur = next;
  }
  return false;
}

bool is_graph_output(const Graph& g, const std::string& t) {
  return std::find(g.outputs.begin(), g.outputs.end(), t) != g.outputs.end();
}

}  // namespace

std::set<std::string> conv_neighbour_boundaries(const KernelView& k) {
  std::set<std::string> out;
  if (!k.graph) return out;
  const Graph& g = *k.graph;
  const std::set<std::size_t> inside(k.nodes.begin(), k.nodes.end());
  auto four_d_f32 = [&](const std::string& t) {
    const TensorInfo& info = g.tensor(t);
    return info.dtype == DType::F32 && info.shape.size() == 4;
  };
  for (const auto& t : k.outputs) {
    if (four_d_f32(t) && !is_graph_output(g, t) && only_conv_readers(g, t, inside, true)) {
      out.insert(t);
    }
  }
  for (const auto& t : k.inputs) {
    if (g.is_constant(t) || !four_d_f32(t)) continue;
    if (std::find(g.inputs.begin(), g.inputs.end(), t) != g.inputs.end()) continue;
    if (produced_by_conv_chain(g, t) && only_conv_readers(g, t, inside, false)) out.insert(t);
  }
  return out;
}

}  // namespace orchid
