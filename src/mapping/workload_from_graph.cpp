// Workload extraction from an imported graph: heavy ops become layers, elementwise and
// pooling work folds into a single producer as its epilogue (or becomes a cheap layer),
// layout ops become edges; each layer keeps a recipe of its ONNX nodes for GPU costing.
#include "mapping/workload_from_graph.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "ir/op_traits.hpp"
#include "ir/ops/recurrent_params.hpp"
#include "util/error.hpp"

namespace orchid::mapping {

namespace {

std::int64_t numel_or_zero(const Graph& g, const std::string& name) {
  if (name.empty() || !g.has_tensor(name)) return 0;
  const TensorInfo& t = g.tensor(name);
  if (!t.has_type) return 0;
  return shape_numel(t.shape);
}

const Shape* shape_or_null(const Graph& g, const std::string& name) {
  if (name.empty() || !g.has_tensor(name)) return nullptr;
  const TensorInfo& t = g.tensor(name);
  return t.has_type ? &t.shape : nullptr;
}

// Shape with the batch (leading dim equal to the graph's batch) and, when `channels` > 1,
// dims equal to the linear op's output channels made symbolic.
Shape symbolic_shape(const Shape& shape, std::int64_t native_batch, std::int64_t channels,
                     bool batch_symbol) {
  Shape out = shape;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (batch_symbol && i == 0 && out.size() >= 2 && out[0] == native_batch) {
      out[0] = kBatchDim;
    } else if (channels > 1 && out[i] == channels) {
      out[i] = kChannelDim;
    }
  }
  return out;
}

std::string recipe_key(const LayerRecipe& r) {
  std::string key;
  for (const LayerNode& n : r.nodes) {
    key += n.node.op_type + "{";
    for (const auto& [k, v] : n.node.attributes) key += k + "=" + attribute_to_string(v) + ";";
    key += "}(";
    for (const LayerNodeInput& in : n.inputs) {
      key += std::to_string(static_cast<int>(in.from)) + ":" + std::to_string(in.value) + ":";
      for (std::int64_t d : in.shape) key += std::to_string(d) + "x";
      key += std::string(dtype_name(in.dtype));
      if (in.data) {
        key += "=";
        for (std::int64_t i = 0; i < in.data->numel(); ++i) {
          key += fmt::format("{},", in.data->get_as_double(i));
        }
      }
      key += ";";
    }
    key += ")";
  }
  return key;
}

}  // namespace

Workload extract_workload(const Graph& graph, std::int64_t batch, const std::string& name) {
  graph.require_static_shapes("multi-accelerator mapping");
  Workload w;
  w.name = name;
  w.batch = batch;
  w.graph = std::make_shared<const Graph>(graph);
  // For every tensor: the set of layers whose output it (transitively) is.
  std::unordered_map<std::string, std::vector<int>> source;
  std::vector<bool> merge_ok;  // a layer may still absorb an elementwise epilogue
  std::unordered_map<std::string, int> consumers;
  for (const Node& node : graph.nodes) {
    for (const auto& in : node.inputs) {
      if (!in.empty()) ++consumers[in];
    }
  }
  for (const auto& o : graph.outputs) ++consumers[o];
  // What the GPU costing needs to rebuild each layer's subgraph: its nodes besides the
  // linear op, and for every tensor the (layer, value) it is inside a layer.
  std::vector<std::shared_ptr<LayerRecipe>> recipes;
  std::vector<int> values;  // per layer: values so far (linear output first)
  std::unordered_map<std::string, std::pair<int, int>> value_of;
  std::int64_t native_batch = 1;
  if (!graph.inputs.empty()) {
    const Shape* s0 = shape_or_null(graph, graph.inputs[0]);
    if (s0 && !s0->empty() && (*s0)[0] > 0) native_batch = (*s0)[0];
  }
  auto record = [&](const Node& node, int layer, std::int64_t channels) {
    LayerNode ln;
    ln.node.op_type = node.op_type;
    ln.node.domain = node.domain;
    ln.node.attributes = node.attributes;
    for (const auto& in : node.inputs) {
      LayerNodeInput li;
      if (in.empty()) {
        li.from = LayerNodeInput::From::Omitted;
      } else if (graph.is_constant(in)) {
        const TensorInfo& t = graph.tensor(in);
        li.from = LayerNodeInput::From::Constant;
        li.dtype = t.dtype;
        li.shape = symbolic_shape(t.shape, native_batch, channels, false);
        if (t.data && t.data->numel() <= 64) li.data = t.data;
      } else if (auto it = value_of.find(in); it != value_of.end() && it->second.first == layer) {
        li.from = LayerNodeInput::From::Value;
        li.value = it->second.second;
      } else {
        li.from = LayerNodeInput::From::External;
        if (const Shape* sh = shape_or_null(graph, in)) {
          li.shape = symbolic_shape(*sh, native_batch, 0, true);
          li.dtype = graph.tensor(in).dtype;
        }
      }
      ln.inputs.push_back(std::move(li));
    }
    recipes[layer]->nodes.push_back(std::move(ln));
    for (const auto& o : node.outputs) value_of[o] = {layer, values[layer]};
    ++values[layer];
  };

  auto sources_of = [&](const Node& node) {
    std::vector<int> out;
    for (const auto& in : node.inputs) {
      if (in.empty() || graph.is_constant(in)) continue;
      auto it = source.find(in);
      if (it == source.end()) continue;  // a graph input
      out.insert(out.end(), it->second.begin(), it->second.end());
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  };

  for (std::size_t idx : graph.topological_order()) {
    const Node& node = graph.nodes[idx];
    const std::string& op = node.op_type;
    if (node.outputs.empty()) continue;
    const std::string& out_name = node.outputs[0];
    const std::int64_t out_numel = numel_or_zero(graph, out_name);
    std::vector<int> src = sources_of(node);
    if (op_traits(op).structural) {
      for (const auto& o : node.outputs) source[o] = src;
      // Executed with its latest producer, or wherever needed when it reads no layer.
      if (src.empty()) {
        w.free_nodes.push_back(idx);
      } else {
        w.layers[src.back()].nodes.push_back(idx);
      }
      // Layout ops move no work: inside a layer, their output stands for their input.
      if (!node.inputs.empty()) {
        if (auto it = value_of.find(node.inputs[0]); it != value_of.end()) {
          for (const auto& o : node.outputs) value_of[o] = it->second;
        }
      }
      continue;
    }
    Layer l;
    l.name = node.name.empty() ? op + "_" + std::to_string(idx) : node.name;
    l.batch = batch;
    l.preds = src;
    l.out_elems = out_numel;
    bool heavy = false;
    if (op == "Conv") {
      const Shape* wshape = shape_or_null(graph, node.inputs.size() > 1 ? node.inputs[1] : "");
      const Shape* oshape = shape_or_null(graph, out_name);
      if (wshape && oshape && wshape->size() == 4 && oshape->size() == 4) {
        l.kind = LayerKind::Conv;
        l.m = (*wshape)[0];
        l.n = (*wshape)[1];
        l.k = (*wshape)[2];
        l.r = (*oshape)[2];
        l.c = (*oshape)[3];
        l.s = node.attr_ints("strides", {1, 1})[0];
        l.p = node.attr_ints("pads", {0, 0, 0, 0})[0];
        l.in_elems = numel_or_zero(graph, node.inputs[0]);
        l.bias = node.has_input(2);
        l.conv_groups = node.attr_int("group", 1);
        heavy = true;
      }
    } else if (op == "MatMul" || op == "Gemm") {
      const Shape* a = shape_or_null(graph, node.inputs[0]);
      const Shape* b = shape_or_null(graph, node.inputs.size() > 1 ? node.inputs[1] : "");
      if (a && b && !a->empty() && b->size() >= 2) {
        const bool trans_a = op == "Gemm" && node.attr_int("transA", 0) != 0;
        const bool trans_b = op == "Gemm" && node.attr_int("transB", 0) != 0;
        const std::int64_t inner = trans_a ? (*a)[0] : a->back();
        const std::int64_t cols = trans_b ? (*b)[b->size() - 2] : b->back();
        if (graph.is_constant(node.inputs[1]) && b->size() == 2) {
          l.kind = LayerKind::Fc;
          l.n = inner;
          l.m = cols;
          l.k = std::max<std::int64_t>(1, out_numel / std::max<std::int64_t>(1, cols));
        } else {
          l.kind = LayerKind::MatMul;
          l.n = inner;
          l.k = cols;
          l.m = a->size() >= 2 ? (*a)[a->size() - 2] : 1;
          l.g = std::max<std::int64_t>(1, out_numel / std::max<std::int64_t>(1, l.m * l.k));
        }
        l.in_elems = numel_or_zero(graph, node.inputs[0]) +
                     (graph.is_constant(node.inputs[1]) ? 0 : numel_or_zero(graph, node.inputs[1]));
        l.bias = op == "Gemm" && node.has_input(2);
        heavy = true;
      }
    } else if (op == "LSTM" || op == "GRU" || op == "RNN") {
      const Shape* x = shape_or_null(graph, node.inputs[0]);
      const Shape* wt = shape_or_null(graph, node.inputs[1]);
      if (x && wt && x->size() == 3 && wt->size() == 3) {
        // Directions run one after the other on an engine: iter = steps x directions.
        const RecurrentParams p = recurrent_params(node, *x, *wt);
        l.kind = LayerKind::Lstm;
        l.hidden = p.hidden;
        l.dimen = p.input_size;
        l.gates = p.gates;
        l.iter = p.seq * p.directions;
        l.in_elems = numel_or_zero(graph, node.inputs[0]);
        l.bias = false;
        heavy = true;
      }
    }
    if (!heavy) {
      // Elementwise/pooling/norm work: fold into a single producer that has no other
      // consumer (an epilogue), else make a cheap layer of its own.
      const std::int64_t work = std::max(out_numel, numel_or_zero(graph, node.inputs[0]));
      if (src.size() == 1 && merge_ok[src[0]]) {
        Layer& host = w.layers[src[0]];
        host.elems += work;
        host.nodes.push_back(idx);
        host.out_elems = out_numel;
        merge_ok[src[0]] = consumers[out_name] == 1;
        for (const auto& o : node.outputs) source[o] = src;
        const std::int64_t channels = host.kind == LayerKind::MatMul  ? host.k
                                      : host.kind == LayerKind::Cheap ? 0
                                                                      : host.m;
        record(node, src[0], channels);
        continue;
      }
      l.kind = LayerKind::Cheap;
      l.elems = work;
      l.in_elems = numel_or_zero(graph, node.inputs[0]);
    }
    const int id = static_cast<int>(w.layers.size());
    l.nodes = {idx};
    w.layers.push_back(l);
    merge_ok.push_back(consumers[out_name] == 1);
    for (const auto& o : node.outputs) source[o] = {id};
    recipes.push_back(std::make_shared<LayerRecipe>());
    values.push_back(0);
    if (heavy) {
      for (const auto& o : node.outputs) value_of[o] = {id, 0};
      values[id] = 1;
    } else {
      record(node, id, 0);  // the cheap layer's own op
    }
  }
  if (w.layers.empty()) fail("{}: no layers to map", name);
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    w.layers[i].index = static_cast<int>(i) + 1;
    w.layers[i].modality = 1;
    recipes[i]->key = recipe_key(*recipes[i]);
    w.layers[i].recipe = recipes[i];
  }
  w.link();
  return w;
}

}  // namespace orchid::mapping
