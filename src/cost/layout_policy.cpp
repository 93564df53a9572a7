#include "cost/layout_policy.hpp"

#include <algorithm>

#include "ir/op_traits.hpp"

namespace orchid {

bool keep_channels_last(std::span<const LayoutUse> uses) {
  bool written = false, read = false, by_convolution = false;
  for (LayoutUse u : uses) {
    switch (u) {
      case LayoutUse::Plain:
        return false;
      case LayoutUse::ChannelsLastWrite:
        written = by_convolution = true;
        break;
      case LayoutUse::ChannelsLastSource:
      case LayoutUse::ChannelsLastOperand:
        read = by_convolution = true;
        break;
      case LayoutUse::LoopWrite:
        written = true;
        break;
      case LayoutUse::LoopRead:
        read = true;
        break;
    }
  }
  return written && read && by_convolution;
}

std::set<std::string> LayoutUses::channels_last() const {
  std::set<std::string> kept;
  for (const auto& [tensor, uses] : uses_) {
    if (keep_channels_last(uses)) kept.insert(tensor);
  }
  return kept;
}

namespace {

bool is_convolution(const Node& n) {
  return op_traits(n.op_type).onednn == OnednnAlgorithm::Convolution;
}

// How a neighbour `n` reading `t` will use it: a Conv's source; an Add of `t` and another
// full-size activation is a residual the executor folds into the Conv producing the other
// operand (an Add of a constant is a bias, which a fused loop computes when it is not the
// Conv's own post-op); anything else reads it plain.
LayoutUse reader_use(const Graph& g, const Node& n, const std::string& t) {
  if (is_convolution(n) && !n.inputs.empty() && n.inputs[0] == t) {
    return LayoutUse::ChannelsLastSource;
  }
  if (op_traits(n.op_type).onednn == OnednnAlgorithm::BinaryAdd && n.inputs.size() == 2) {
    const std::string& other = n.inputs[0] == t ? n.inputs[1] : n.inputs[0];
    if (!other.empty() && !g.is_constant(other) && g.tensor(other).shape == g.tensor(t).shape) {
      return LayoutUse::ChannelsLastOperand;
    }
  }
  return LayoutUse::Plain;
}

// Adds the uses of every reader of `t` (outside `inside` only, when skip_inside).
void add_reader_uses(const Graph& g, const std::string& t, const std::set<std::size_t>& inside,
                     bool skip_inside, std::vector<LayoutUse>& uses) {
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (std::find(n.inputs.begin(), n.inputs.end(), t) == n.inputs.end()) continue;
    if (skip_inside && inside.count(i)) continue;
    uses.push_back(reader_use(g, n, t));
  }
}

// `t` ends a convolution's elementwise epilogue (or is a convolution's result): the
// executor writes it channels-last if that convolution runs so.
bool produced_by_conv_chain(const Graph& g, const std::string& t) {
  std::string cur = t;
  for (int step = 0; step < 8; ++step) {
    const Node* producer = nullptr;
    for (const Node& n : g.nodes) {
      if (std::find(n.outputs.begin(), n.outputs.end(), cur) != n.outputs.end()) producer = &n;
    }
    if (!producer) return false;
    if (is_convolution(*producer)) return true;
    if (!op_traits(producer->op_type).epilogue) return false;
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

bool contains(const std::vector<std::string>& v, const std::string& t) {
  return std::find(v.begin(), v.end(), t) != v.end();
}

}  // namespace

std::set<std::string> channels_last_boundaries(const KernelView& k) {
  std::set<std::string> out;
  if (!k.graph) return out;
  const Graph& g = *k.graph;
  const std::set<std::size_t> inside(k.nodes.begin(), k.nodes.end());
  auto four_d_f32 = [&](const std::string& t) {
    const TensorInfo& info = g.tensor(t);
    return info.dtype == DType::F32 && info.shape.size() == 4;
  };
  for (const auto& t : k.outputs) {
    if (!four_d_f32(t)) continue;
    std::vector<LayoutUse> uses{LayoutUse::ChannelsLastWrite};  // by the kernel itself
    if (contains(g.outputs, t)) uses.push_back(LayoutUse::Plain);
    add_reader_uses(g, t, inside, true, uses);
    if (keep_channels_last(uses)) out.insert(t);
  }
  for (const auto& t : k.inputs) {
    if (g.is_constant(t) || !four_d_f32(t) || contains(g.inputs, t)) continue;
    std::vector<LayoutUse> uses{produced_by_conv_chain(g, t) ? LayoutUse::ChannelsLastWrite
                                                             : LayoutUse::Plain};
    add_reader_uses(g, t, inside, false, uses);
    if (keep_channels_last(uses)) out.insert(t);
  }
  return out;
}

}  // namespace orchid
