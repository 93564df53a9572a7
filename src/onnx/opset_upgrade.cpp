#include "onnx/opset_upgrade.hpp"

#include <functional>
#include <limits>
#include <unordered_set>

#include "util/error.hpp"

namespace orchid {

namespace {

struct Upgrader {
  Graph& graph;
  std::int64_t opset;
  const TypeHints& hints;
  const std::string& file;
  std::unordered_set<std::string> node_names;
  std::unordered_set<std::string> used_tensors;  // consumed by a node or a graph output

  std::string fresh_tensor(const std::string& base) {
    std::string name = base;
    for (int k = 2; graph.has_tensor(name); ++k) name = base + "_" + std::to_string(k);
    graph.add_tensor(name);
    return name;
  }
  std::string fresh_node(const std::string& base) {
    std::string name = base;
    for (int k = 2; node_names.count(name); ++k) name = base + "_" + std::to_string(k);
    node_names.insert(name);
    return name;
  }
  std::string add_constant(const Node& node, const std::string& what, Tensor value) {
    const std::string name = fresh_tensor(node.name + "_" + what);
    graph.set_constant(name, std::move(value));
    return name;
  }
  // dtype of a tensor when the proto or the graph says it; F32 otherwise (the ops that
  // need this are float-only in the old opsets).
  DType dtype_hint(const std::string& tensor) const {
    if (graph.has_tensor(tensor) && graph.tensor(tensor).has_type) {
      return graph.tensor(tensor).dtype;
    }
    auto it = hints.dtypes.find(tensor);
    return it == hints.dtypes.end() ? DType::F32 : it->second;
  }
  std::optional<std::size_t> rank_hint(const std::string& tensor) const {
    if (graph.has_tensor(tensor) && graph.tensor(tensor).has_type) {
      return graph.tensor(tensor).shape.size();
    }
    auto it = hints.ranks.find(tensor);
    if (it == hints.ranks.end()) return std::nullopt;
    return it->second;
  }
  template <typename... Args>
  [[noreturn]] void refuse(const Node& node, fmt::format_string<Args...> format,
                           Args&&... args) const {
    throw UnsupportedError(fmt::format("'{}': {} (opset {}): ", file, node.describe(), opset) +
                           fmt::format(format, std::forward<Args>(args)...));
  }
};

void set_input(Node& node, std::size_t index, const std::string& name) {
  if (node.inputs.size() <= index) node.inputs.resize(index + 1);
  node.inputs[index] = name;
}

// Moves an int-list attribute into constant int64 input `index` (absent: input omitted).
void ints_attribute_to_input(Upgrader& u, Node& node, const char* key, std::size_t index) {
  if (!node.has_attribute(key)) return;
  const auto values = node.attr_ints(key, {});
  node.attributes.erase(key);
  set_input(node, index, u.add_constant(node, key, Tensor::from_int64s(values)));
}

// Squeeze/Unsqueeze/ReduceSum (< 13) axes, Split (< 13) split: attribute -> input 1.
void axes_to_input(Upgrader& u, Node& node, std::vector<Node>&) {
  const char* key = node.op_type == "Split" ? "split" : "axes";
  if (node.op_type == "Unsqueeze" && !node.has_attribute("axes")) {
    u.refuse(node, "Unsqueeze needs an 'axes' attribute");
  }
  ints_attribute_to_input(u, node, key, 1);
}

// Slice (< 10): starts/ends/axes attributes -> inputs 1..3.
void slice_attributes_to_inputs(Upgrader& u, Node& node, std::vector<Node>&) {
  if (!node.has_attribute("starts") || !node.has_attribute("ends")) {
    u.refuse(node, "Slice needs 'starts' and 'ends' attributes");
  }
  ints_attribute_to_input(u, node, "starts", 1);
  ints_attribute_to_input(u, node, "ends", 2);
  ints_attribute_to_input(u, node, "axes", 3);
}

Tensor scalar_of(DType dtype, float value) {
  return Tensor::scalar_f32(value).cast(dtype);
}

// Pad (< 11): pads/value attributes -> inputs 1, 2; mode stays an attribute.
void pad_attributes_to_inputs(Upgrader& u, Node& node, std::vector<Node>&) {
  if (!node.has_attribute("pads")) u.refuse(node, "Pad needs a 'pads' attribute");
  ints_attribute_to_input(u, node, "pads", 1);
  const float value = node.attr_float("value", 0.0f);
  node.attributes.erase("value");
  // 0 is the default constant_value, so the input is only needed otherwise.
  if (value != 0.0f && node.attr_string("mode", "constant") == "constant") {
    set_input(node, 2,
              u.add_constant(node, "value", scalar_of(u.dtype_hint(node.inputs[0]), value)));
  }
}

// Clip (< 11): min/max attributes -> inputs 1, 2 of the input's dtype.
void clip_attributes_to_inputs(Upgrader& u, Node& node, std::vector<Node>&) {
  const DType dtype = u.dtype_hint(node.inputs.at(0));
  for (auto [key, index] : {std::pair{"min", 1}, std::pair{"max", 2}}) {
    if (!node.has_attribute(key)) continue;
    const float bound = node.attr_float(key, 0.0f);
    node.attributes.erase(key);
    set_input(node, index, u.add_constant(node, key, scalar_of(dtype, bound)));
  }
}

// Resize attributes that reproduce Upsample / Resize-10: out = in[floor(i / scale)].
void set_asymmetric_resize(Node& node) {
  const std::string mode = node.attr_string("mode", "nearest");
  node.attributes["mode"] = mode;
  node.attributes["coordinate_transformation_mode"] = std::string("asymmetric");
  if (mode == "nearest") node.attributes["nearest_mode"] = std::string("floor");
}

// Upsample (7-9, deprecated after): -> Resize(X, roi="", scales).
void upsample_to_resize(Upgrader& u, Node& node, std::vector<Node>&) {
  std::string mode = node.attr_string("mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  if (mode != "nearest" && mode != "linear") u.refuse(node, "Upsample mode '{}'", mode);
  std::string scales;
  if (node.has_attribute("scales")) {
    const auto values = node.attr_floats("scales", {});
    scales = u.add_constant(
        node, "scales",
        Tensor::from_vector<float>({static_cast<std::int64_t>(values.size())}, values));
  } else if (node.has_input(1)) {
    scales = node.inputs[1];
  } else {
    u.refuse(node, "Upsample has neither a 'scales' attribute nor a scales input");
  }
  node.op_type = "Resize";
  node.attributes.clear();
  node.attributes["mode"] = mode;
  set_asymmetric_resize(node);
  node.inputs = {node.inputs.at(0), "", scales};
}

// Resize-10 (X, scales) -> Resize(X, "", scales), asymmetric like Upsample.
// Resize-11/12 required roi/scales inputs and used empty tensors for "absent".
void resize_to_13(Upgrader& u, Node& node, std::vector<Node>&) {
  if (u.opset == 10) {
    if (!node.has_input(1)) u.refuse(node, "Resize-10 needs a scales input");
    node.inputs = {node.inputs.at(0), "", node.inputs[1]};
    set_asymmetric_resize(node);
    return;
  }
  for (std::size_t i = 1; i <= 2 && i < node.inputs.size(); ++i) {
    const std::string& name = node.inputs[i];
    if (!name.empty() && u.graph.is_constant(name) && u.graph.tensor(name).data->numel() == 0) {
      node.inputs[i].clear();
    }
  }
}

// Softmax/LogSoftmax (< 13) coerce the input to 2-D at `axis` (default 1). Where that is
// not the same as opset 13's single-axis form, compute it explicitly:
// Flatten(axis) -> Softmax(axis=-1) -> Reshape(Shape(X)).
void softmax_to_13(Upgrader& u, Node& node, std::vector<Node>& out) {
  const std::int64_t axis = node.attr_int("axis", 1);
  const std::string& x = node.inputs.at(0);
  const auto rank = u.rank_hint(x);
  const auto r = static_cast<std::int64_t>(rank.value_or(0));
  const bool last_axis = axis == -1 || (rank && (axis < 0 ? axis + r : axis) == r - 1);
  if (last_axis) {
    node.attributes["axis"] = std::int64_t{-1};
    return;
  }
  const std::string y = node.outputs.at(0);
  const std::string flat = u.fresh_tensor(node.name + "_flat");
  const std::string normalized = u.fresh_tensor(node.name + "_2d");
  const std::string shape = u.fresh_tensor(node.name + "_shape");

  Node flatten{u.fresh_node(node.name + "_flatten"), "Flatten", "", {}, {x}, {flat}};
  flatten.attributes["axis"] = axis;
  Node shape_of{u.fresh_node(node.name + "_shape"), "Shape", "", {}, {x}, {shape}};
  Node reshape{u.fresh_node(node.name + "_reshape"), "Reshape", "", {}, {normalized, shape}, {y}};
  node.attributes["axis"] = std::int64_t{-1};
  node.inputs = {flat};
  node.outputs = {normalized};
  out.push_back(std::move(flatten));
  out.push_back(std::move(shape_of));
  out.push_back(std::move(node));
  out.push_back(std::move(reshape));
  node = Node{};  // moved into `out`; signals "replaced"
}

// Drops optional outputs nobody reads; refuses them when read (training-mode outputs).
void drop_unused_outputs(Upgrader& u, Node& node, std::size_t keep, const char* why) {
  for (std::size_t i = keep; i < node.outputs.size(); ++i) {
    if (!node.outputs[i].empty() && u.used_tensors.count(node.outputs[i])) {
      u.refuse(node, "output {} ('{}') is used; {}", i, node.outputs[i], why);
    }
  }
  if (node.outputs.size() > keep) node.outputs.resize(keep);
}

// BatchNormalization: legacy attributes go; spatial=0 (per-activation statistics,
// opset < 9) has different semantics and is refused; training outputs must be unused.
void batchnorm_to_17(Upgrader& u, Node& node, std::vector<Node>&) {
  if (node.attr_int("spatial", 1) == 0) u.refuse(node, "spatial=0 is not supported");
  node.attributes.erase("spatial");
  node.attributes.erase("is_test");
  node.attributes.erase("consumed_inputs");
  // Exporters keep the statistics outputs of training graphs (opset < 14: mean, var and
  // saved statistics; 14+: running mean/var); inference reads only Y.
  drop_unused_outputs(u, node, 1, "training-mode statistics are not supported");
}

// A constant input's single value, or nullopt when the input is absent or computed.
std::optional<double> constant_scalar(const Upgrader& u, const Node& node, std::size_t index) {
  if (!node.has_input(index) || !u.graph.is_constant(node.inputs[index])) return std::nullopt;
  const Tensor& t = *u.graph.tensor(node.inputs[index]).data;
  if (t.numel() != 1) return std::nullopt;
  return t.get_as_double(0);
}

// Dropout as exporters leave it in inference graphs: y = x, and the mask output (which
// older PyTorch exports keep) all true. Opset < 12 had ratio/is_test attributes;
// training_mode=true with ratio 0 drops nothing, so it is the identity as well.
void dropout_for_inference(Upgrader& u, Node& node, std::vector<Node>& out) {
  node.attributes.erase("ratio");
  node.attributes.erase("is_test");
  node.attributes.erase("seed");
  if (node.has_input(2)) {
    const auto training = constant_scalar(u, node, 2);
    if (!training) u.refuse(node, "training_mode computed at run time");
    if (*training != 0.0) {
      const auto ratio = node.has_input(1) ? constant_scalar(u, node, 1) : std::optional(0.5);
      if (ratio != 0.0) u.refuse(node, "training_mode=true with a non-zero ratio (random masks)");
    }
    node.inputs.resize(1);  // inference: ratio and training_mode change nothing
  }
  if (node.outputs.size() < 2 || node.outputs[1].empty()) return;
  const std::string mask = node.outputs[1];
  node.outputs.resize(1);
  const std::string shape = u.fresh_tensor(node.name + "_mask_shape");
  Node shape_of{
      u.fresh_node(node.name + "_mask_shape"), "Shape", "", {}, {node.inputs[0]}, {shape}};
  Node fill{u.fresh_node(node.name + "_mask"), "ConstantOfShape", "", {}, {shape}, {mask}};
  fill.attributes["value"] = Tensor::from_vector<std::uint8_t>({1}, {1}).cast(DType::Bool);
  out.push_back(std::move(node));
  out.push_back(std::move(shape_of));
  out.push_back(std::move(fill));
  node = Node{};  // moved into `out`; signals "replaced"
}

// RoiAlign (< 16) had no coordinate_transformation_mode and behaved as
// output_half_pixel; opset 16's default is half_pixel.
void roialign_to_16(Upgrader&, Node& node, std::vector<Node>&) {
  if (!node.has_attribute("coordinate_transformation_mode")) {
    node.attributes["coordinate_transformation_mode"] = std::string("output_half_pixel");
  }
}

// TopK (< 10): attribute k -> int64 [1] input 1.
void topk_to_10(Upgrader& u, Node& node, std::vector<Node>&) {
  if (!node.has_attribute("k")) u.refuse(node, "TopK needs a 'k' attribute");
  const std::int64_t k = node.attr_int("k", 0);
  node.attributes.erase("k");
  set_input(node, 1, u.add_constant(node, "k", Tensor::from_int64s({k})));
}

using Rewrite = std::function<void(Upgrader&, Node&, std::vector<Node>&)>;

constexpr std::int64_t kEveryOpset = std::numeric_limits<std::int64_t>::max();

struct RewriteRule {
  const char* op_type;
  std::int64_t before_opset;  // applies when the model's opset is lower
  Rewrite rewrite;
};

const std::vector<RewriteRule>& rules() {
  static const std::vector<RewriteRule> table = {
      {"Squeeze", 13, axes_to_input},
      {"Unsqueeze", 13, axes_to_input},
      {"Split", 13, axes_to_input},
      {"ReduceSum", 13, axes_to_input},
      {"Slice", 10, slice_attributes_to_inputs},
      {"Pad", 11, pad_attributes_to_inputs},
      {"Clip", 11, clip_attributes_to_inputs},
      {"Upsample", 18, upsample_to_resize},
      {"Resize", 13, resize_to_13},
      {"Softmax", 13, softmax_to_13},
      {"LogSoftmax", 13, softmax_to_13},
      {"BatchNormalization", kEveryOpset, batchnorm_to_17},
      {"Dropout", kEveryOpset, dropout_for_inference},
      {"RoiAlign", 16, roialign_to_16},
      {"TopK", 10, topk_to_10},
  };
  return table;
}

}  // namespace

void upgrade_to_opset17(Graph& graph, std::int64_t from_opset, const TypeHints& hints,
                        const std::string& file) {
  Upgrader u{graph, from_opset, hints, file, {}, {}};
  for (const Node& node : graph.nodes) {
    u.node_names.insert(node.name);
    u.used_tensors.insert(node.inputs.begin(), node.inputs.end());
  }
  u.used_tensors.insert(graph.outputs.begin(), graph.outputs.end());

  std::vector<Node> upgraded;
  upgraded.reserve(graph.nodes.size());
  for (Node& node : graph.nodes) {
    const RewriteRule* rule = nullptr;
    for (const auto& r : rules()) {
      if (node.op_type == r.op_type && from_opset < r.before_opset) rule = &r;
    }
    if (rule) {
      // Every op these rules rewrite reads a data input first (a fuzzed Clip without
      // inputs made the rule read past the end).
      if (!node.has_input(0)) u.refuse(node, "{} needs its first input", node.op_type);
      try {
        rule->rewrite(u, node, upgraded);
      } catch (const UnsupportedError&) {
        throw;
      } catch (const Error& e) {
        fail("'{}': opset {}: {}", file, from_opset, e.what());
      }
    }
    if (!node.op_type.empty()) upgraded.push_back(std::move(node));
  }
  graph.nodes = std::move(upgraded);
}

}  // namespace orchid
