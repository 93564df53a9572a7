// Layer DAGs: extraction from an imported graph, case files, and their element counts.
#include "mapping/workload.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "passes/load_model.hpp"
#include "util/error.hpp"

namespace orchid::mapping {

double Layer::weight_elements() const {
  switch (kind) {
    case LayerKind::Conv:
      return static_cast<double>(m) * n * k * k;
    case LayerKind::Fc:
      return static_cast<double>(m) * n;
    case LayerKind::Lstm:
      return 4.0 * hidden * (hidden + dimen);
    default:
      return 0;
  }
}

double Layer::input_elements() const {
  double per = static_cast<double>(in_elems);
  if (per == 0) {
    switch (kind) {
      case LayerKind::Conv:
        per = static_cast<double>(n) * ((r - 1) * s + k) * ((c - 1) * s + k);
        break;
      case LayerKind::Fc:
        per = static_cast<double>(n) * k;
        break;
      case LayerKind::MatMul:
        per = static_cast<double>(g) * n * (m + k);
        break;
      case LayerKind::Lstm:
        per = static_cast<double>(iter) * dimen;
        break;
      case LayerKind::Cheap:
        per = static_cast<double>(elems);
        break;
    }
  }
  return per * batch;
}

double Layer::output_elements() const {
  double per = static_cast<double>(out_elems);
  if (per == 0) {
    switch (kind) {
      case LayerKind::Conv:
        per = static_cast<double>(m) * r * c;
        break;
      case LayerKind::Fc:
        per = static_cast<double>(m) * k;
        break;
      case LayerKind::MatMul:
        per = static_cast<double>(g) * m * k;
        break;
      case LayerKind::Lstm:
        per = static_cast<double>(iter) * hidden;
        break;
      case LayerKind::Cheap:
        per = static_cast<double>(elems);
        break;
    }
  }
  return per * batch;
}

double Layer::ops() const {
  double per = 0;
  switch (kind) {
    case LayerKind::Conv:
      per = 2.0 * m * n * k * k * r * c;
      break;
    case LayerKind::Fc:
      per = 2.0 * m * n * k;
      break;
    case LayerKind::MatMul:
      per = 2.0 * g * m * n * k;
      break;
    case LayerKind::Lstm:
      per = static_cast<double>(iter) * (8.0 * hidden * dimen + 8.0 * hidden * hidden);
      break;
    case LayerKind::Cheap:
      break;
  }
  return (per + static_cast<double>(elems)) * batch;
}

void Workload::link() {
  const int n = static_cast<int>(layers.size());
  // Stable topological order: among ready layers the earliest listed goes first, so
  // chains keep their file order (H2H's frontier order depends on it).
  std::vector<int> indeg(n, 0);
  std::vector<std::vector<int>> succ(n);
  for (int i = 0; i < n; ++i) {
    for (int p : layers[i].preds) {
      if (p < 0 || p >= n || p == i)
        fail("workload {}: layer '{}' has a bad predecessor", name, layers[i].name);
      succ[p].push_back(i);
      ++indeg[i];
    }
  }
  std::set<int> ready;
  for (int i = 0; i < n; ++i) {
    if (indeg[i] == 0) ready.insert(i);
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (int s : succ[i]) {
      if (--indeg[s] == 0) ready.insert(s);
    }
  }
  if (static_cast<int>(order.size()) != n) fail("workload {}: the layer graph has a cycle", name);
  std::vector<int> position(n);
  for (int i = 0; i < n; ++i) position[order[i]] = i;
  std::vector<Layer> sorted;
  sorted.reserve(n);
  for (int i : order) sorted.push_back(std::move(layers[i]));
  for (Layer& l : sorted) {
    for (int& p : l.preds) p = position[p];
    std::sort(l.preds.begin(), l.preds.end());
    l.preds.erase(std::unique(l.preds.begin(), l.preds.end()), l.preds.end());
    l.succs.clear();
  }
  layers = std::move(sorted);
  for (int i = 0; i < n; ++i) {
    for (int p : layers[i].preds) layers[p].succs.push_back(i);
  }
}

namespace {

const std::unordered_set<std::string> kLayoutOps = {
    "Reshape", "Transpose", "Flatten",  "Squeeze",         "Unsqueeze",    "Identity",
    "Shape",   "Gather",    "Concat",   "Split",           "Slice",        "Cast",
    "Expand",  "Dropout",   "Constant", "ConstantOfShape", "Range",        "Tile",
    "Pad",     "Size",      "Where",    "Equal",           "DepthToSpace", "SpaceToDepth"};

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
    if (kLayoutOps.count(op)) {
      for (const auto& o : node.outputs) source[o] = src;
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
    } else if (op == "LSTM" || op == "GRU") {
      const Shape* x = shape_or_null(graph, node.inputs[0]);
      const Shape* wt = shape_or_null(graph, node.inputs[1]);
      if (x && wt && x->size() == 3 && wt->size() == 3) {
        l.kind = LayerKind::Lstm;
        l.hidden = node.attr_int("hidden_size", (*wt)[1] / 4);
        l.dimen = (*wt)[2];
        l.iter = (*x)[0] * (*wt)[0];
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

namespace {

std::int64_t get_int(const toml::table& t, const char* key, const std::string& path,
                     const std::string& where, std::int64_t fallback, bool required) {
  const toml::node* node = t.get(key);
  if (node == nullptr) {
    if (required) fail("{}: {}: missing key '{}'", path, where, key);
    return fallback;
  }
  auto v = node->value<std::int64_t>();
  if (!v) fail("{}: {}: key '{}' must be an integer", path, where, key);
  if (*v <= 0 && std::string(key) != "P") {
    fail("{}: {}: key '{}' must be positive, got {}", path, where, key, *v);
  }
  return *v;
}

}  // namespace

Workload parse_case(const std::string& content, const std::string& path, std::int64_t batch) {
  toml::table root;
  try {
    root = toml::parse(content, path);
  } catch (const toml::parse_error& e) {
    fail("{}:{}: TOML syntax error: {}", path, e.source().begin.line, e.description());
  }
  Workload w;
  w.name = root["name"].value_or(std::filesystem::path(path).stem().string());
  w.batch = batch;
  const toml::array* mods = root["modality"].as_array();
  if (mods == nullptr || mods->empty()) fail("{}: no [[modality]] tables", path);
  std::unordered_map<std::string, int> by_name;
  for (std::size_t mi = 0; mi < mods->size(); ++mi) {
    const toml::table* mt = mods->get(mi)->as_table();
    if (mt == nullptr) fail("{}: modality[{}] is not a table", path, mi);
    const toml::array* layers = (*mt)["layers"].as_array();
    if (layers == nullptr) fail("{}: modality[{}]: missing key 'layers'", path, mi);
    int prev = -1;
    for (std::size_t li = 0; li < layers->size(); ++li) {
      const toml::table* lt = layers->get(li)->as_table();
      const std::string where = fmt::format("modality[{}] layer {}", mi + 1, li + 1);
      if (lt == nullptr) fail("{}: {} is not a table", path, where);
      Layer l;
      l.batch = batch;
      l.modality = static_cast<int>(mi) + 1;
      l.index = static_cast<int>(li) + 1;
      l.name = (*lt)["name"].value_or(fmt::format("M{}L{}", l.modality, l.index));
      // A name of the H2H form M<i>L<j> sets the index H2H's locality rule compares.
      if (auto pos = l.name.rfind('L'); pos != std::string::npos && pos + 1 < l.name.size()) {
        try {
          l.index = std::stoi(l.name.substr(pos + 1));
        } catch (...) {
        }
      }
      const std::string type = (*lt)["type"].value_or(std::string());
      if (!parse_kind(type, l.kind)) {
        fail(
            "{}: {} ('{}'): key 'type': unsupported layer type '{}' (conv, fc, matmul, lstm, "
            "cheap)",
            path, where, l.name, type);
      }
      switch (l.kind) {
        case LayerKind::Conv:
          l.m = get_int(*lt, "M", path, where, 1, true);
          l.n = get_int(*lt, "N", path, where, 1, true);
          l.r = get_int(*lt, "R", path, where, 1, true);
          l.c = get_int(*lt, "C", path, where, 1, true);
          l.k = get_int(*lt, "K", path, where, 1, true);
          l.s = get_int(*lt, "S", path, where, 1, false);
          l.p = get_int(*lt, "P", path, where, 0, false);
          break;
        case LayerKind::Fc:
          l.m = get_int(*lt, "M", path, where, 1, true);
          l.n = get_int(*lt, "N", path, where, 1, true);
          l.k = get_int(*lt, "K", path, where, 1, false);
          break;
        case LayerKind::MatMul:
          l.g = get_int(*lt, "G", path, where, 1, false);
          l.m = get_int(*lt, "M", path, where, 1, true);
          l.n = get_int(*lt, "N", path, where, 1, true);
          l.k = get_int(*lt, "K", path, where, 1, true);
          break;
        case LayerKind::Lstm:
          l.hidden = get_int(*lt, "Hidden", path, where, 1, true);
          l.dimen = get_int(*lt, "Dimen", path, where, 1, true);
          l.iter = get_int(*lt, "Iter", path, where, 1, true);
          break;
        case LayerKind::Cheap:
          l.elems = get_int(*lt, "elems", path, where, 1, true);
          break;
      }
      if (by_name.count(l.name)) fail("{}: {}: duplicate layer name '{}'", path, where, l.name);
      const int id = static_cast<int>(w.layers.size());
      if (prev >= 0) l.preds.push_back(prev);
      by_name[l.name] = id;
      w.layers.push_back(l);
      prev = id;
    }
  }
  if (const toml::array* edges = root["edge"].as_array()) {
    for (std::size_t i = 0; i < edges->size(); ++i) {
      const toml::table* e = edges->get(i)->as_table();
      if (e == nullptr) fail("{}: edge[{}] is not a table", path, i);
      const std::string from = (*e)["from"].value_or(std::string());
      const std::string to = (*e)["to"].value_or(std::string());
      if (!by_name.count(from)) fail("{}: edge[{}]: key 'from': unknown layer '{}'", path, i, from);
      if (!by_name.count(to)) fail("{}: edge[{}]: key 'to': unknown layer '{}'", path, i, to);
      w.layers[by_name[to]].preds.push_back(by_name[from]);
    }
  }
  w.link();
  return w;
}

Workload load_case_file(const std::string& path, std::int64_t batch) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot open workload file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_case(ss.str(), path, batch);
}

Workload load_workload(const std::string& spec, std::int64_t batch, const ConfigRoots& roots) {
  if (batch < 1) fail("--batch must be at least 1, got {}", batch);
  namespace fs = std::filesystem;
  auto from_onnx = [&](const std::string& path) {
    LoadedModel model = load_model(path);
    return extract_workload(model.graph, batch, fs::path(path).stem().string());
  };
  if (spec.size() > 5 && spec.ends_with(".onnx")) return from_onnx(spec);
  if (spec.ends_with(".toml")) return load_case_file(spec, batch);
  if (const auto as_case = roots.find(fs::path("workloads") / (spec + ".toml"))) {
    return load_case_file(as_case->string(), batch);
  }
  // The zoo's models sit beside the configs folder in the source tree and the install.
  for (const auto& root : roots.roots()) {
    const fs::path as_model = root.parent_path() / "models" / (spec + ".onnx");
    std::error_code ec;
    if (fs::is_regular_file(as_model, ec)) return from_onnx(as_model.string());
  }
  fail(
      "unknown workload '{}': not an .onnx/.toml file, not workloads/{}.toml in the config "
      "roots ({}), not models/{}.onnx beside them",
      spec, spec, roots.describe(), spec);
}

}  // namespace orchid::mapping
