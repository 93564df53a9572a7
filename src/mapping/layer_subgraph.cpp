// Rebuilding a layer's subgraph for the orchestrator (see layer_subgraph.hpp).
#include "mapping/layer_subgraph.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "ir/op_registry.hpp"
#include "util/error.hpp"

namespace orchid::mapping {

namespace {

class Builder {
 public:
  explicit Builder(Graph& g) : g_(g) {}

  std::string input(const Shape& shape, DType dtype = DType::F32) {
    const std::string name = fmt::format("in{}", g_.inputs.size());
    g_.set_type(name, dtype, shape);
    g_.inputs.push_back(name);
    return name;
  }
  std::string constant(const Shape& shape, DType dtype = DType::F32) {
    const std::string name = fmt::format("w{}", constants_++);
    g_.set_constant(name, Tensor(dtype, shape));
    return name;
  }
  std::string constant(const Tensor& value) {
    const std::string name = fmt::format("w{}", constants_++);
    g_.set_constant(name, value);
    return name;
  }
  // Adds a node with one output and infers its type.
  std::string node(const std::string& op, std::vector<std::string> inputs,
                   std::map<std::string, Attribute> attributes = {}) {
    Node n;
    n.name = fmt::format("n{}", g_.nodes.size());
    n.op_type = op;
    n.inputs = std::move(inputs);
    n.attributes = std::move(attributes);
    n.outputs = {fmt::format("t{}", g_.nodes.size())};
    g_.nodes.push_back(n);
    infer_node_types(g_, g_.nodes.back());
    return n.outputs[0];
  }
  const Shape& shape(const std::string& tensor) const { return g_.tensor(tensor).shape; }

 private:
  Graph& g_;
  int constants_ = 0;
};

std::int64_t channels_of(const Layer& l) {
  switch (l.kind) {
    case LayerKind::Conv:
    case LayerKind::Fc:
      return l.m;
    case LayerKind::MatMul:
      return l.k;
    default:
      return 0;
  }
}

Shape resolve(const Shape& symbolic, const Layer& l) {
  Shape out = symbolic;
  for (std::int64_t& d : out) {
    if (d == kBatchDim) d = l.batch;
    if (d == kChannelDim) d = channels_of(l);
  }
  return out;
}

// The axis a cheap layer's shard splits: the first non-batch dim of its first external
// input that is at least the split (-1: none).
struct SplitAxis {
  std::size_t rank = 0;
  int axis = -1;
  std::int64_t full = 0;
};
SplitAxis split_axis(const LayerNode& ln, const Layer& l) {
  SplitAxis a;
  if (l.kind != LayerKind::Cheap || l.split <= 1) return a;
  for (const LayerNodeInput& li : ln.inputs) {
    if (li.from != LayerNodeInput::From::External) continue;
    const Shape s = resolve(li.shape, l);
    for (std::size_t i = 1; i < s.size(); ++i) {
      if (s[i] >= l.split) {
        a = {s.size(), static_cast<int>(i), s[i]};
        return a;
      }
    }
    return a;
  }
  return a;
}
// Applies the split to a shape that is aligned with the split input (same rank, same
// extent on the split axis): the sharded input and constants broadcast against it.
Shape apply_split(Shape s, const SplitAxis& a, const Layer& l) {
  if (a.axis >= 0 && s.size() == a.rank && s[a.axis] == a.full) {
    s[a.axis] = (a.full + l.split - 1) / l.split;
  }
  return s;
}

std::string linear_op(Builder& b, const Layer& l, LayerSubgraph& out) {
  switch (l.kind) {
    case LayerKind::Conv: {
      const std::string x = b.input({l.batch, l.n, (l.r - 1) * l.s + l.k, (l.c - 1) * l.s + l.k});
      std::vector<std::string> in = {x, b.constant({l.m, l.n, l.k, l.k})};
      if (l.bias) in.push_back(b.constant({l.m}));
      return b.node("Conv", in,
                    {{"kernel_shape", std::vector<std::int64_t>{l.k, l.k}},
                     {"strides", std::vector<std::int64_t>{l.s, l.s}},
                     {"pads", std::vector<std::int64_t>{0, 0, 0, 0}}});
    }
    case LayerKind::Fc: {
      std::string y = b.node("MatMul", {b.input({l.batch * l.k, l.n}), b.constant({l.n, l.m})});
      if (l.bias) y = b.node("Add", {y, b.constant({l.m})});
      return y;
    }
    case LayerKind::MatMul:
      return b.node("MatMul",
                    {b.input({l.batch * l.g, l.m, l.n}), b.input({l.batch * l.g, l.n, l.k})});
    case LayerKind::Lstm: {
      // One step: both products, bias, gate activations and the cell update (for GRU and
      // RNN the same shape of step with 3 or 1 gate blocks).
      const std::int64_t h = l.hidden;
      const std::int64_t n = l.gates;
      const std::string xw =
          b.node("MatMul", {b.input({l.batch, l.dimen}), b.constant({l.dimen, n * h})});
      const std::string hr = b.node("MatMul", {b.input({l.batch, h}), b.constant({h, n * h})});
      const std::string z = b.node("Add", {b.node("Add", {xw, hr}), b.constant({n * h})});
      const std::string gates = b.node(
          "Reshape", {b.node("Sigmoid", {z}), b.constant(Tensor::from_int64s({l.batch, n, h}))});
      auto gate = [&](std::int64_t i) {
        return b.node("Slice", {gates, b.constant(Tensor::from_int64s({i})),
                                b.constant(Tensor::from_int64s({i + 1})),
                                b.constant(Tensor::from_int64s({1}))});
      };
      const std::string c = b.node(
          "Add", {b.node("Mul", {gate(std::min<std::int64_t>(1, n - 1)), b.input({l.batch, 1, h})}),
                  gate(n - 1)});
      out.repeat = static_cast<double>(l.iter);
      return b.node("Mul", {gate(std::min<std::int64_t>(2, n - 1)), c});
    }
    case LayerKind::Cheap:
      break;
  }
  return {};
}

}  // namespace

LayerSubgraph layer_subgraph(const Layer& l) {
  LayerSubgraph out;
  Graph& g = out.graph;
  g.name = l.name;
  Builder b(g);
  std::vector<std::string> values;
  if (l.kind != LayerKind::Cheap) values.push_back(linear_op(b, l, out));
  if (!l.recipe) {
    // Case-file layer: the usual epilogue of its kind.
    if (l.kind == LayerKind::Cheap) {
      values.push_back(b.node("Relu", {b.input({l.batch, std::max<std::int64_t>(1, l.elems)})}));
    } else if (l.kind == LayerKind::Conv || l.kind == LayerKind::Fc) {
      values.push_back(b.node("Relu", {values.back()}));
    }
  } else {
    SplitAxis axis;
    for (const LayerNode& ln : l.recipe->nodes) {
      std::vector<std::string> in;
      const Shape* like = nullptr;  // externals inside an epilogue take a value's shape
      for (const LayerNodeInput& li : ln.inputs) {
        if (li.from == LayerNodeInput::From::Value) {
          if (li.value < 0 || li.value >= static_cast<int>(values.size())) {
            fail("layer '{}': {} reads value {} of {}", l.name, ln.node.op_type, li.value,
                 values.size());
          }
          like = &b.shape(values[li.value]);
          break;
        }
      }
      if (axis.axis < 0) axis = split_axis(ln, l);  // the head's, kept for the epilogue
      for (const LayerNodeInput& li : ln.inputs) {
        switch (li.from) {
          case LayerNodeInput::From::Omitted:
            in.emplace_back();
            break;
          case LayerNodeInput::From::Value:
            in.push_back(values[li.value]);
            break;
          case LayerNodeInput::From::Constant:
            in.push_back(li.data && std::none_of(li.shape.begin(), li.shape.end(),
                                                 [](std::int64_t d) { return d < 0; })
                             ? b.constant(*li.data)
                             : b.constant(apply_split(resolve(li.shape, l), axis, l), li.dtype));
            break;
          case LayerNodeInput::From::External:
            if (li.shape.empty() && like == nullptr) {
              fail("layer '{}': input of {} has no known shape", l.name, ln.node.op_type);
            }
            in.push_back(l.kind != LayerKind::Cheap && like != nullptr
                             ? b.input(*like, li.dtype)
                             : b.input(apply_split(resolve(li.shape, l), axis, l), li.dtype));
            break;
        }
      }
      // Optional outputs (MaxPool indices, LayerNorm statistics) are not asked for.
      values.push_back(b.node(ln.node.op_type, in, ln.node.attributes));
    }
  }
  if (values.empty()) fail("layer '{}': nothing to price", l.name);
  // Every value no node reads is an output, so no recorded work is dropped as dead.
  std::set<std::string> read;
  for (const Node& n : g.nodes) read.insert(n.inputs.begin(), n.inputs.end());
  for (const std::string& v : values) {
    if (!read.count(v) && std::find(g.outputs.begin(), g.outputs.end(), v) == g.outputs.end()) {
      g.outputs.push_back(v);
    }
  }
  return out;
}

std::string layer_signature(const Layer& l) {
  return fmt::format("{}|{},{},{},{},{},{},{}|{},{},{},{}|{},{},{},{}|{}", kind_name(l.kind), l.m,
                     l.n, l.r, l.c, l.k, l.s, l.g, l.hidden, l.dimen, l.iter, l.gates, l.elems,
                     l.batch, l.split, l.bias ? 1 : 0, l.recipe ? l.recipe->key : std::string("-"));
}

Graph nodes_subgraph(const Graph& model, const std::string& name,
                     const std::vector<std::size_t>& nodes,
                     const std::vector<std::string>& outputs) {
  Graph sub;
  sub.name = name;
  sub.opset = model.opset;
  std::set<std::string> inside;
  for (std::size_t n : nodes) {
    for (const auto& o : model.nodes.at(n).outputs) inside.insert(o);
  }
  for (std::size_t n : nodes) {
    const Node& node = model.nodes[n];
    for (const auto& in : node.inputs) {
      if (in.empty() || inside.count(in) || sub.has_tensor(in)) continue;
      sub.add_tensor(in) = model.tensor(in);
      if (!model.is_constant(in)) sub.inputs.push_back(in);
    }
    for (const auto& o : node.outputs) {
      if (!o.empty()) sub.add_tensor(o) = model.tensor(o);
    }
    sub.nodes.push_back(node);
  }
  sub.outputs = outputs;
  return sub;
}

Graph layer_program(const Graph& model, const Layer& layer) {
  if (layer.nodes.empty()) return {};
  std::set<std::size_t> own(layer.nodes.begin(), layer.nodes.end());
  std::set<std::string> read_elsewhere(model.outputs.begin(), model.outputs.end());
  for (std::size_t n = 0; n < model.nodes.size(); ++n) {
    if (own.count(n)) continue;
    read_elsewhere.insert(model.nodes[n].inputs.begin(), model.nodes[n].inputs.end());
  }
  std::vector<std::string> outputs;
  for (std::size_t n : layer.nodes) {
    for (const auto& o : model.nodes.at(n).outputs) {
      if (!o.empty() && read_elsewhere.count(o)) outputs.push_back(o);
    }
  }
  if (outputs.empty()) return {};
  return nodes_subgraph(model, layer.name, layer.nodes, outputs);
}

}  // namespace orchid::mapping
