#include "passes/resize_before_pointwise.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace orchid {

namespace {

// A Conv with a 1x1 kernel, unit strides, no padding, one group, constant f32 weights
// (and bias), on 4-D tensors.
bool is_pointwise_conv(const Graph& g, const Node& n) {
  if (n.op_type != "Conv" || n.outputs.size() != 1 || !n.has_input(0) || !n.has_input(1)) {
    return false;
  }
  const std::string& w = n.inputs[1];
  if (!g.is_constant(w) || g.tensor(w).dtype != DType::F32) return false;
  const Shape& ws = g.tensor(w).shape;
  if (ws.size() != 4 || ws[2] != 1 || ws[3] != 1) return false;
  if (n.has_input(2) && (!g.is_constant(n.inputs[2]) || g.tensor(n.inputs[2]).dtype != DType::F32))
    return false;
  if (n.attr_int("group", 1) != 1) return false;
  for (const char* key : {"strides", "dilations"}) {
    for (std::int64_t v : n.attr_ints(key, {})) {
      if (v != 1) return false;
    }
  }
  for (std::int64_t v : n.attr_ints("pads", {})) {
    if (v != 0) return false;
  }
  const std::string pad = n.attr_string("auto_pad", "NOTSET");
  return pad == "NOTSET" || pad == "VALID";
}

// A Resize of a 4-D f32 tensor that keeps N and C and blends pixels linearly per channel,
// with constant scales / sizes: what commutes with a 1x1 convolution.
bool is_channelwise_resize(const Graph& g, const Node& n) {
  if (n.op_type != "Resize" || n.outputs.size() != 1 || !n.has_input(0)) return false;
  if (n.attr_string("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize") {
    return false;
  }
  for (std::size_t i = 1; i < n.inputs.size(); ++i) {
    if (n.has_input(i) && !g.is_constant(n.inputs[i])) return false;
  }
  const TensorInfo& x = g.tensor(n.inputs[0]);
  const Shape& y = g.tensor(n.outputs[0]).shape;
  return x.dtype == DType::F32 && x.shape.size() == 4 && y.size() == 4 && x.shape[0] == y[0] &&
         x.shape[1] == y[1];
}

// Input channels [from, from + count) of 1x1 weights [O, C, 1, 1].
Tensor channel_slice(const Tensor& w, std::int64_t from, std::int64_t count) {
  const std::int64_t out = w.shape()[0], in = w.shape()[1];
  Tensor s(DType::F32, {out, count, 1, 1});
  const float* src = w.data<float>();
  float* dst = s.data<float>();
  for (std::int64_t o = 0; o < out; ++o) {
    std::copy_n(src + o * in + from, count, dst + o * count);
  }
  return s;
}

class Rewriter {
 public:
  explicit Rewriter(Graph& g) : g_(g) {}

  // Rewrites every 1x1 convolution reading the Concat at `concat` and returns how many;
  // 0 when the pattern does not hold (nothing is changed then).
  std::size_t rewrite(std::size_t concat) {
    const Node cat = g_.nodes[concat];
    if (cat.op_type != "Concat" || cat.outputs.size() != 1) return 0;
    const Shape& cs = g_.tensor(cat.outputs[0]).shape;
    if (cs.size() != 4 || cat.attr_int("axis", 0) % 4 != 1) return 0;
    if (std::count(g_.outputs.begin(), g_.outputs.end(), cat.outputs[0])) return 0;
    const auto consumers = g_.consumers();
    auto readers = consumers.find(cat.outputs[0]);
    if (readers == consumers.end()) return 0;
    std::vector<std::size_t> convs;
    for (std::size_t r : readers->second) {
      const Node& n = g_.nodes[r];
      if (!is_pointwise_conv(g_, n) || n.inputs[0] != cat.outputs[0]) return 0;
      convs.push_back(r);
    }
    // Each source: its channel range, and the Resize that makes it (when it is one).
    struct Source {
      std::string tensor;
      std::int64_t from = 0, channels = 0;
      std::optional<std::size_t> resize;
    };
    std::vector<Source> sources;
    const auto producers = g_.producers();
    bool upsamples = false;
    std::int64_t from = 0;
    for (const auto& t : cat.inputs) {
      if (t.empty()) return 0;
      Source s{t, from, g_.tensor(t).shape.at(1), std::nullopt};
      from += s.channels;
      auto p = producers.find(t);
      auto used = consumers.find(t);
      const bool only_concat = used != consumers.end() && used->second.size() == 1 &&
                               !std::count(g_.outputs.begin(), g_.outputs.end(), t);
      if (p != producers.end() && only_concat && is_channelwise_resize(g_, g_.nodes[p->second])) {
        const Node& resize = g_.nodes[p->second];
        const Shape& in = g_.tensor(resize.inputs[0]).shape;
        const Shape& out = g_.tensor(t).shape;
        if (in == out) {
          // Same size: every mode samples the source pixels themselves (weights 0 and 1),
          // an identity. The convolution reads the source.
          s.tensor = resize.inputs[0];
        } else {
          s.resize = p->second;
          upsamples = upsamples || in[2] * in[3] < out[2] * out[3];
        }
      }
      sources.push_back(s);
    }
    if (!upsamples || from != cs[1]) return 0;
    // Full-resolution terms first: the convolution of the first one takes the others as
    // post-op adds.
    std::stable_sort(sources.begin(), sources.end(), [](const Source& a, const Source& b) {
      return !a.resize.has_value() && b.resize.has_value();
    });
    std::vector<Node> added;
    for (std::size_t c : convs) expand(g_.nodes[c], sources, added);
    // The convolutions now only name their results; drop them, keep the rest in order.
    std::set<std::size_t> drop(convs.begin(), convs.end());
    std::vector<Node> kept;
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      if (!drop.count(i)) kept.push_back(std::move(g_.nodes[i]));
    }
    for (auto& n : added) kept.push_back(std::move(n));
    g_.nodes = std::move(kept);
    return convs.size();
  }

 private:
  template <typename S>
  void expand(const Node& conv, const std::vector<S>& sources, std::vector<Node>& added) {
    const std::string y = conv.outputs[0];
    const Tensor& w = *g_.tensor(conv.inputs[1]).data;
    const std::int64_t out_channels = w.shape()[0];
    const DType dtype = g_.tensor(y).dtype;
    const Shape ys = g_.tensor(y).shape;
    std::string sum;
    for (std::size_t i = 0; i < sources.size(); ++i) {
      const S& s = sources[i];
      const std::string base = fmt::format("{}_part{}", conv.name.empty() ? y : conv.name, i);
      Node part = conv;
      part.name = fresh_node_name(base);
      const std::string weights = g_.fresh_tensor_name(base + "_weights");
      g_.set_constant(weights, channel_slice(w, s.from, s.channels));
      part.inputs = {s.tensor, weights};
      if (i == 0 && conv.has_input(2)) part.inputs.push_back(conv.inputs[2]);  // bias once
      std::string term;
      if (s.resize) {
        const Node& resize = g_.nodes[*s.resize];
        const std::string& x = resize.inputs[0];
        const Shape& xs = g_.tensor(x).shape;
        part.inputs[0] = x;
        const std::string low = g_.fresh_tensor_name(base + "_low");
        g_.set_type(low, dtype, {xs[0], out_channels, xs[2], xs[3]});
        part.outputs = {low};
        Node up = resize;
        up.name = fresh_node_name(base + "_resize");
        up.inputs[0] = low;
        if (up.has_input(3) && g_.tensor(up.inputs[3]).shape == Shape{4}) {
          // Sizes of every axis: the channels are now the convolution's outputs.
          std::vector<std::int64_t> sizes(ys.begin(), ys.end());
          const std::string name = g_.fresh_tensor_name(base + "_sizes");
          g_.set_constant(name, Tensor::from_vector<std::int64_t>({4}, sizes));
          up.inputs[3] = name;
        }
        term = g_.fresh_tensor_name(base + "_up");
        g_.set_type(term, dtype, ys);
        up.outputs = {term};
        added.push_back(std::move(part));
        added.push_back(std::move(up));
      } else {
        term = g_.fresh_tensor_name(base + "_full");
        g_.set_type(term, dtype, ys);
        part.outputs = {term};
        added.push_back(std::move(part));
      }
      if (sum.empty()) {
        sum = term;
        continue;
      }
      Node add;
      add.op_type = "Add";
      add.name = fresh_node_name(base + "_add");
      const bool last = i + 1 == sources.size();
      const std::string next = last ? y : g_.fresh_tensor_name(base + "_sum");
      if (!last) g_.set_type(next, dtype, ys);
      add.inputs = {sum, term};
      add.outputs = {next};
      added.push_back(std::move(add));
      sum = next;
    }
  }

  std::string fresh_node_name(const std::string& base) {
    std::string name = base;
    for (int i = 1; taken_.count(name) || node_named(name); ++i) {
      name = fmt::format("{}_{}", base, i);
    }
    taken_.insert(name);
    return name;
  }
  bool node_named(const std::string& name) const {
    return std::any_of(g_.nodes.begin(), g_.nodes.end(),
                       [&](const Node& n) { return n.name == name; });
  }

  Graph& g_;
  std::set<std::string> taken_;
};

}  // namespace

ResizeCommuteStats convolve_before_upsampling(Graph& graph) {
  ResizeCommuteStats stats;
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t i = 0; i < graph.nodes.size() && !changed; ++i) {
      if (graph.nodes[i].op_type != "Concat") continue;
      if (const std::size_t convs = Rewriter(graph).rewrite(i)) {
        stats.convolutions += convs;
        changed = true;
      }
    }
  }
  if (stats.convolutions > 0) {
    graph.remove_dead_nodes();
    graph.sort_topologically();
  }
  return stats;
}

}  // namespace orchid
