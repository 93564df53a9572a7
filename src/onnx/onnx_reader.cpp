#include "onnx/onnx_reader.hpp"

#include <set>
#include <unordered_set>

#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include "onnx/attribute_proto.hpp"
#include "onnx/declared_sizes.hpp"
#include "onnx/opset_upgrade.hpp"
#include "onnx/proto_io.hpp"
#include "onnx/stripped_weights.hpp"
#include "onnx/tensor_proto.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

constexpr std::int64_t kMinOpset = 7;

// The newest opset PyPI onnx 1.23 defines. orchid checks models itself (reader, opset
// rewrites, shape functions); Debian's libonnx (ONNX 1.12, opset <= 17) only parses them.
constexpr std::int64_t kMaxOpset = 28;

bool is_default_domain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

std::int64_t default_opset(const onnx::ModelProto& model, const std::string& path) {
  for (const auto& op : model.opset_import()) {
    if (!is_default_domain(op.domain())) continue;
    const std::int64_t v = op.version();
    if (v < kMinOpset || v > kMaxOpset) {
      unsupported("'{}': ONNX opset {} is not supported (orchid reads opsets {}..{})", path, v,
                  kMinOpset, kMaxOpset);
    }
    return v;
  }
  // A model built only from other domains (e.g. ai.onnx.preview.training) is well
  // formed, just outside what orchid implements.
  for (const auto& op : model.opset_import()) {
    unsupported(
        "'{}': the model uses only the op domain '{}' (opset {}), which orchid does "
        "not implement",
        path, op.domain(), op.version());
  }
  fail("'{}': the model declares no default-domain opset_import", path);
}

class Reader {
 public:
  Reader(const std::string& path, const ImportOptions& options)
      : path_(path), options_(options), base_dir_(model_folder(path)) {}

  Graph read() {
    onnx::ModelProto model = load_model_proto(path_);
    opset_ = default_opset(model, path_);
    check_declared_sizes(model, path_);
    regenerate_stripped_weights(model, base_dir_);
    const onnx::GraphProto& g = model.graph();

    graph_.name = g.name().empty() ? "main" : g.name();
    for (const auto& p : model.metadata_props()) graph_.metadata[p.key()] = p.value();
    graph_.metadata["onnx.opset"] = std::to_string(opset_);
    graph_.metadata["onnx.producer"] = model.producer_name();
    if (!model.producer_version().empty()) {
      graph_.metadata["onnx.producer_version"] = model.producer_version();
    }

    read_initializers(g, graph_, model.mutable_graph());
    read_inputs(g);
    collect_hints(g);
    for (const auto& out : g.output()) graph_.outputs.push_back(out.name());
    std::unordered_set<std::string> produced;
    for (int i = 0; i < g.node_size(); ++i) read_node(g.node(i), i, graph_, produced);
    check_references();

    upgrade(graph_);
    return std::move(graph_);
  }

 private:
  // Opset-17 forms everywhere, branches included.
  void upgrade(Graph& graph) {
    upgrade_to_opset17(graph, opset_, hints_, path_);
    graph.opset = 17;
    for (Node& node : graph.nodes) {
      for (auto& [key, branch] : node.subgraphs) upgrade(*branch);
    }
  }

  // `owned`: the same graph, writable, when its initializers' values may be freed as they
  // are copied (the top-level graph: a large model's weights are then held once).
  void read_initializers(const onnx::GraphProto& g, Graph& graph,
                         onnx::GraphProto* owned = nullptr) {
    if (g.sparse_initializer_size() > 0) {
      unsupported("'{}': sparse initializer '{}' is not supported", path_,
                  g.sparse_initializer(0).values().name());
    }
    for (int i = 0; i < g.initializer_size(); ++i) {
      const onnx::TensorProto& init = g.initializer(i);
      if (init.name().empty()) fail("'{}': an initializer has no name", path_);
      if (graph.is_constant(init.name())) {
        fail("'{}': initializer '{}' is defined twice", path_, init.name());
      }
      const std::string context = fmt::format("'{}': initializer '{}'", path_, init.name());
      graph.set_constant(init.name(), tensor_from_proto(init, base_dir_, context));
      if (owned) release_tensor_data(*owned->mutable_initializer(i));
    }
  }

  // "batch x 3 x 224 x 224": the shape as declared, for messages and inspect.
  static std::string declared_shape(const onnx::TensorShapeProto& shape) {
    std::string text;
    for (const auto& dim : shape.dim()) {
      if (!text.empty()) text += " x ";
      if (dim.has_dim_value()) {
        text += std::to_string(dim.dim_value());
      } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
        text += dim.dim_param();
      } else {
        text += "?";
      }
    }
    return text.empty() ? "scalar" : text;
  }

  Shape input_shape(const onnx::ValueInfoProto& vi) const {
    const auto& type = vi.type().tensor_type();
    if (!type.has_shape()) {
      fail("'{}': graph input '{}' has no shape; give it one with an input shape override", path_,
           vi.name());
    }
    Shape shape;
    for (int i = 0; i < type.shape().dim_size(); ++i) {
      const auto& dim = type.shape().dim(i);
      if (dim.has_dim_value()) {
        if (dim.dim_value() < 0) {
          fail("'{}': graph input '{}' has negative dimension {}", path_, vi.name(),
               dim.dim_value());
        }
        shape.push_back(dim.dim_value());
      } else if (auto it = options_.dim_params.find(dim.dim_param());
                 dim.has_dim_param() && it != options_.dim_params.end()) {
        shape.push_back(it->second);
      } else {
        shape.push_back(options_.default_dim);
        if (options_.warn) {
          const std::string what = dim.has_dim_param() && !dim.dim_param().empty()
                                       ? fmt::format("symbolic dimension '{}'", dim.dim_param())
                                       : std::string("unnamed dimension");
          options_.warn(fmt::format("input '{}' ({}): {} (dim {}) set to {}; choose it with {}",
                                    vi.name(), declared_shape(type.shape()), what, i,
                                    options_.default_dim,
                                    dim.has_dim_param() && !dim.dim_param().empty()
                                        ? fmt::format("--dim {}=N", dim.dim_param())
                                        : fmt::format("--shape {}=...", vi.name())));
        }
      }
    }
    return shape;
  }

  // An override must keep the declared rank, or the error would surface deep inside the
  // graph instead of at the input. (Fixed dims may change: a fully convolutional net
  // declared at 224x224 runs at other resolutions.)
  void check_override(const onnx::ValueInfoProto& vi, const Shape& shape) const {
    const auto& type = vi.type().tensor_type();
    if (!type.has_shape()) return;
    const auto& declared = type.shape();
    if (static_cast<int>(shape.size()) != declared.dim_size()) {
      fail("'{}': input shape {} for '{}' has rank {}, the model declares rank {} ({})", path_,
           shape_to_string(shape), vi.name(), shape.size(), declared.dim_size(),
           declared_shape(declared));
    }
  }

  // Every dim_params name must be one some graph input declares.
  void check_dim_names(const onnx::GraphProto& g) const {
    if (options_.dim_params.empty()) return;
    std::set<std::string> names;
    for (const auto& vi : g.input()) {
      if (graph_.is_constant(vi.name()) || !vi.type().has_tensor_type()) continue;
      for (const auto& dim : vi.type().tensor_type().shape().dim()) {
        if (dim.has_dim_param() && !dim.dim_param().empty()) names.insert(dim.dim_param());
      }
    }
    for (const auto& [name, value] : options_.dim_params) {
      if (!names.count(name)) {
        if (names.empty()) {
          fail(
              "'{}': symbolic dimension '{}' is not declared by any graph input (the inputs "
              "have no symbolic dimensions)",
              path_, name);
        }
        fail("'{}': symbolic dimension '{}' is not declared by any graph input (declared: {})",
             path_, name, fmt::join(names, ", "));
      }
    }
  }

  void read_inputs(const onnx::GraphProto& g) {
    check_dim_names(g);
    std::set<std::string> runtime_inputs;
    for (const auto& vi : g.input()) {
      if (graph_.is_constant(vi.name())) continue;  // old exporters list weights as inputs
      if (!runtime_inputs.insert(vi.name()).second) {
        fail("'{}': graph input '{}' is listed twice", path_, vi.name());
      }
      if (!vi.type().has_tensor_type()) {
        unsupported(
            "'{}': graph input '{}' is not a tensor (sequence/map/optional types are "
            "not supported)",
            path_, vi.name());
      }
      const auto elem = vi.type().tensor_type().elem_type();
      const auto dtype = dtype_from_onnx(elem);
      if (!dtype) {
        unsupported("'{}': graph input '{}' has unsupported dtype {}", path_, vi.name(),
                    onnx_dtype_name(elem));
      }
      auto override_it = options_.input_shapes.find(vi.name());
      if (override_it != options_.input_shapes.end()) check_override(vi, override_it->second);
      const Shape shape =
          override_it != options_.input_shapes.end() ? override_it->second : input_shape(vi);
      for (auto d : shape) {
        if (d < 0) fail("'{}': input shape override for '{}' is negative", path_, vi.name());
      }
      if (vi.type().tensor_type().has_shape()) {
        const auto& dims = vi.type().tensor_type().shape().dim();
        if (std::any_of(dims.begin(), dims.end(), [](auto& d) { return !d.has_dim_value(); })) {
          graph_.metadata[declared_shape_key(vi.name())] =
              declared_shape(vi.type().tensor_type().shape());
        }
      }
      graph_.set_type(vi.name(), *dtype, shape);
      graph_.inputs.push_back(vi.name());
    }
    for (const auto& [name, shape] : options_.input_shapes) {
      if (!runtime_inputs.count(name)) {
        fail("'{}': input shape override names '{}', which is not a graph input (inputs: {})",
             path_, name, fmt::join(runtime_inputs, ", "));
      }
    }
  }

  void collect_hints(const onnx::GraphProto& g) {
    auto note = [&](const onnx::ValueInfoProto& vi) {
      if (!vi.type().has_tensor_type()) return;
      const auto& t = vi.type().tensor_type();
      if (auto d = dtype_from_onnx(t.elem_type())) hints_.dtypes[vi.name()] = *d;
      if (t.has_shape()) hints_.ranks[vi.name()] = static_cast<std::size_t>(t.shape().dim_size());
    };
    for (const auto& vi : g.value_info()) note(vi);
    for (const auto& vi : g.output()) note(vi);
  }

  std::string unique_node_name(const onnx::NodeProto& n, int index) {
    std::string base = n.name().empty() ? fmt::format("{}_{}", n.op_type(), index) : n.name();
    std::string name = base;
    for (int k = 2; !node_names_.insert(name).second; ++k) name = fmt::format("{}_{}", base, k);
    return name;
  }

  void read_constant_node(const onnx::NodeProto& n, Node& node, const std::string& where,
                          Graph& graph) {
    if (n.output_size() != 1 || n.output(0).empty()) fail("{}: needs exactly one output", where);
    if (n.attribute_size() != 1) {
      fail("{}: needs exactly one value attribute, has {}", where, n.attribute_size());
    }
    const auto& a = n.attribute(0);
    const std::string& key = a.name();
    Tensor value;
    if (key == "value") {
      // Any attribute type may carry the name 'value' in a hostile file (found by fuzzing).
      auto* tensor = std::get_if<Tensor>(&node.attributes.at(key));
      if (!tensor) fail("{}: attribute 'value' must be a tensor", where);
      value = std::move(*tensor);
    } else if (key == "value_float") {
      value = Tensor::scalar_f32(node.attr_float(key, 0.0f));
    } else if (key == "value_floats") {
      const auto v = node.attr_floats(key, {});
      value = Tensor::from_vector<float>({static_cast<std::int64_t>(v.size())}, v);
    } else if (key == "value_int") {
      value = Tensor::from_vector<std::int64_t>({}, {node.attr_int(key, 0)});
    } else if (key == "value_ints") {
      value = Tensor::from_int64s(node.attr_ints(key, {}));
    } else {
      unsupported("{}: attribute '{}' (sparse or string constants) is not supported", where, key);
    }
    if (graph.has_tensor(n.output(0))) {
      fail("{}: output '{}' is already defined elsewhere", where, n.output(0));
    }
    graph.set_constant(n.output(0), std::move(value));
  }

  void read_node(const onnx::NodeProto& n, int index, Graph& graph,
                 std::unordered_set<std::string>& produced) {
    Node node;
    node.name = unique_node_name(n, index);
    node.op_type = n.op_type();
    const std::string where =
        fmt::format("'{}': {} node '{}' (opset {})", path_, node.op_type, node.name, opset_);
    if (node.op_type.empty()) fail("'{}': node '{}' has no op_type", path_, node.name);
    if (!is_default_domain(n.domain())) {
      unsupported("{}: domain '{}' is not supported (only the default ONNX domain is)", where,
                  n.domain());
    }
    for (const auto& a : n.attribute()) {
      if (a.name().empty()) fail("{}: an attribute has no name", where);
      const bool branch =
          node.op_type == "If" && (a.name() == "then_branch" || a.name() == "else_branch");
      const bool body = node.op_type == "Loop" && a.name() == "body";
      if (branch || body) {
        if (a.type() != onnx::AttributeProto::GRAPH || !a.has_g()) {
          fail("{}: attribute '{}' must be a graph", where, a.name());
        }
        node.subgraphs[a.name()] = read_subgraph(a.g(), where + ", " + a.name(), body);
        continue;
      }
      node.attributes[a.name()] = attribute_from_proto(a, base_dir_, where);
    }
    if (node.op_type == "Constant") {
      try {
        read_constant_node(n, node, where, graph);
      } catch (const UnsupportedError&) {
        throw;
      } catch (const Error& e) {
        fail("{}: {}", where, e.what());
      }
      return;
    }
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    // Trailing "" are the same as omitted optional inputs/outputs.
    while (!node.inputs.empty() && node.inputs.back().empty()) node.inputs.pop_back();
    while (!node.outputs.empty() && node.outputs.back().empty()) node.outputs.pop_back();
    if (node.op_type == "If") bind_branches(node, where);
    if (node.op_type == "Loop") bind_loop_body(node, n, where);
    for (const auto& out : node.outputs) {
      if (out.empty()) continue;
      if (graph.is_constant(out) ||
          std::find(graph.inputs.begin(), graph.inputs.end(), out) != graph.inputs.end()) {
        fail("{}: output '{}' overwrites a graph input or weight", where, out);
      }
      if (!produced.insert(out).second) fail("{}: output '{}' is produced twice", where, out);
      graph.add_tensor(out);
    }
    graph.nodes.push_back(std::move(node));
  }

  // An If branch or a Loop body: its own constants and nodes; names it reads but does
  // not define come from the enclosing scopes and become inputs after the declared ones
  // (a Loop body declares iteration number, condition and carried values; a branch
  // declares none). bind_branches / bind_loop_body pass the outer values in.
  std::shared_ptr<Graph> read_subgraph(const onnx::GraphProto& g, const std::string& where,
                                       bool loop_body) {
    auto sub = std::make_shared<Graph>();
    sub->name = g.name().empty() ? where : g.name();
    if (!loop_body && g.input_size() > 0) {
      fail("{}: an If branch takes no inputs, this one lists {}", where, g.input_size());
    }
    read_initializers(g, *sub);
    collect_hints(g);
    std::unordered_set<std::string> produced;
    for (const auto& in : g.input()) {
      if (in.name().empty()) fail("{}: a body input has no name", where);
      if (!produced.insert(in.name()).second)
        fail("{}: body input '{}' is listed twice", where, in.name());
      sub->inputs.push_back(in.name());
      sub->set_dynamic(in.name());  // per-iteration state, typed at run time
    }
    for (int i = 0; i < g.node_size(); ++i) read_node(g.node(i), i, *sub, produced);
    for (const auto& out : g.output()) {
      if (out.name().empty()) fail("{}: a subgraph output has no name", where);
      sub->outputs.push_back(out.name());
    }
    std::set<std::string> seen;
    auto capture = [&](const std::string& name) {
      if (name.empty() || produced.count(name) || sub->is_constant(name)) return;
      if (seen.insert(name).second) {
        sub->inputs.push_back(name);
        sub->add_tensor(name);
      }
    };
    for (const Node& node : sub->nodes) {
      for (const auto& in : node.inputs) capture(in);
    }
    for (const auto& out : sub->outputs) capture(out);
    if (loop_body) sub->metadata[kLoopStateInputsKey] = std::to_string(g.input_size());
    return sub;
  }

  // Loop(M, cond, v...) with body(i, cond, v...) -> (cond, v..., scans...): the outer
  // values the body reads are appended after the carried ones, in the body's order.
  void bind_loop_body(Node& node, const onnx::NodeProto& n, const std::string& where) {
    auto it = node.subgraphs.find("body");
    if (it == node.subgraphs.end()) fail("{}: attribute 'body' (a subgraph) is missing", where);
    Graph& body = *it->second;
    const auto declared = static_cast<std::size_t>(n.input_size());
    if (declared < 2)
      fail("{}: Loop takes M and cond (either may be empty), has {}", where, declared);
    const std::size_t carried = declared - 2;
    const std::size_t state = std::stoul(body.metadata.at(kLoopStateInputsKey));
    if (state != declared) {
      fail("{}: body declares {} inputs, expected 2 + {} carried values", where, state, carried);
    }
    if (body.outputs.size() < 1 + carried ||
        body.outputs.size() != 1 + static_cast<std::size_t>(n.output_size())) {
      fail("{}: body has {} outputs, expected 1 + {} node outputs ({} carried)", where,
           body.outputs.size(), n.output_size(), carried);
    }
    node.inputs.assign(n.input().begin(), n.input().end());  // keep empty M / cond in place
    node.outputs.assign(n.output().begin(), n.output().end());
    node.inputs.insert(node.inputs.end(), body.inputs.begin() + static_cast<std::ptrdiff_t>(state),
                       body.inputs.end());
  }

  // Both branches see the same outer values, in one order, after the condition.
  void bind_branches(Node& node, const std::string& where) {
    for (const char* key : {"then_branch", "else_branch"}) {
      auto it = node.subgraphs.find(key);
      if (it == node.subgraphs.end())
        fail("{}: attribute '{}' (a subgraph) is missing", where, key);
      if (it->second->outputs.size() != node.outputs.size()) {
        fail("{}: {} has {} outputs, the node has {}", where, key, it->second->outputs.size(),
             node.outputs.size());
      }
    }
    if (node.inputs.size() != 1 || node.inputs[0].empty()) {
      fail("{}: If takes exactly one input (cond), has {}", where, node.inputs.size());
    }
    std::vector<std::string> outer;
    for (const auto& [key, branch] : node.subgraphs) {
      for (const auto& name : branch->inputs) {
        if (std::find(outer.begin(), outer.end(), name) == outer.end()) outer.push_back(name);
      }
    }
    for (auto& [key, branch] : node.subgraphs) {
      branch->inputs = outer;
      for (const auto& name : outer) branch->add_tensor(name);
    }
    node.inputs.insert(node.inputs.end(), outer.begin(), outer.end());
  }

  // Every node input and graph output must name something that exists.
  void check_references() {
    for (const Node& node : graph_.nodes) {
      for (const auto& in : node.inputs) {
        if (!in.empty() && !graph_.has_tensor(in)) {
          fail(
              "'{}': {} reads tensor '{}', which is not a graph input, initializer or node "
              "output",
              path_, node.describe(), in);
        }
      }
    }
    for (const auto& out : graph_.outputs) {
      if (!graph_.has_tensor(out)) fail("'{}': graph output '{}' is never produced", path_, out);
    }
  }

  const std::string path_;
  const ImportOptions& options_;
  const std::string base_dir_;
  std::int64_t opset_ = 0;
  Graph graph_;
  TypeHints hints_;
  std::unordered_set<std::string> node_names_;
};

}  // namespace

std::string declared_shape_key(const std::string& input) {
  return "onnx.declared_shape." + input;
}

Graph read_onnx(const std::string& path, const ImportOptions& options) {
  return Reader(path, options).read();
}

}  // namespace orchid
