#include "ir/op_registry.hpp"

#include <algorithm>

#include "ir/ops/op_families.hpp"

namespace orchid {

TensorType ShapeContext::input(std::size_t i) const {
  if (!has_input(i)) fail("input {} is missing", i);
  const TensorInfo& info = graph_.tensor(node_.inputs[i]);
  if (!info.has_type) fail("input '{}' has no known type or shape", node_.inputs[i]);
  return {info.dtype, info.shape};
}

const Shape& ShapeContext::input_shape(std::size_t i) const {
  if (!has_input(i)) fail("input {} is missing", i);
  const TensorInfo& info = graph_.tensor(node_.inputs[i]);
  if (!info.has_type) fail("input '{}' has no known type or shape", node_.inputs[i]);
  return info.shape;
}

DType ShapeContext::input_dtype(std::size_t i) const {
  return input(i).dtype;
}

const Tensor* ShapeContext::constant(std::size_t i) const {
  if (!has_input(i)) return nullptr;
  const TensorInfo& info = graph_.tensor(node_.inputs[i]);
  return info.data.get();
}

const Tensor& ShapeContext::required_constant(std::size_t i, const char* what) const {
  const Tensor* t = constant(i);
  if (!t) {
    throw NotConstantError(fmt::format(
        "{} (opset {}): unsupported: input {} ('{}', {}) must be a constant for static shapes",
        node_.describe(), opset(), i, has_input(i) ? node_.inputs[i] : std::string("<missing>"),
        what));
  }
  return *t;
}

void ShapeContext::require_dtype(std::size_t i, std::initializer_list<DType> allowed) const {
  const DType d = input_dtype(i);
  // f16/bf16 are computed in f32 and rounded back (reference interpreter), so they go
  // wherever f32 does.
  const DType as = is_half_float(d) ? DType::F32 : d;
  if (std::find(allowed.begin(), allowed.end(), as) == allowed.end()) {
    unsupported("input {} ('{}') has dtype {}", i, node_.inputs[i], dtype_name(d));
  }
}

namespace {

const OpSchemaTable& schema_table() {
  static const OpSchemaTable table = [] {
    OpSchemaTable t;
    register_elementwise_ops(t);
    register_reduction_ops(t);
    register_normalization_ops(t);
    register_linear_ops(t);
    register_pooling_ops(t);
    register_layout_ops(t);
    register_constant_ops(t);
    register_selection_ops(t);
    register_quantization_ops(t);
    register_recurrent_ops(t);
    register_attention_ops(t);
    apply_op_traits(t);
    return t;
  }();
  return table;
}

}  // namespace

const OpSchema* find_op_schema(const std::string& op_type) {
  const auto& table = schema_table();
  auto it = table.find(op_type);
  return it == table.end() ? nullptr : &it->second;
}

const OpTraits& op_traits(const std::string& op_type) {
  static const OpTraits unknown;
  const OpSchema* schema = find_op_schema(op_type);
  return schema ? schema->traits : unknown;
}

std::vector<std::string> supported_op_types() {
  std::vector<std::string> names;
  for (const auto& [name, schema] : schema_table()) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

void infer_node_types(Graph& graph, const Node& node) {
  if (!node.domain.empty() && node.domain != "ai.onnx") {
    unsupported("{} (opset {}): unsupported: op domain '{}'", node.describe(), graph.opset,
                node.domain);
  }
  const OpSchema* schema = find_op_schema(node.op_type);
  if (!schema) {
    unsupported("{} (opset {}): unsupported: op type '{}' is not implemented", node.describe(),
                graph.opset, node.op_type);
  }
  const int n_in = static_cast<int>(node.inputs.size());
  const int n_out = static_cast<int>(node.outputs.size());
  if (n_in < schema->min_inputs || n_in > schema->max_inputs) {
    fail("{}: has {} inputs, expected {} to {}", node.describe(), n_in, schema->min_inputs,
         schema->max_inputs);
  }
  if (n_out < schema->min_outputs || n_out > schema->max_outputs) {
    fail("{}: has {} outputs, expected {} to {}", node.describe(), n_out, schema->min_outputs,
         schema->max_outputs);
  }
  for (const auto& in : node.inputs) {
    if (!in.empty() && !graph.has_tensor(in)) {
      fail("{}: input '{}' is not defined in the graph", node.describe(), in);
    }
  }
  ShapeContext ctx(graph, node);
  std::vector<TensorType> types = schema->infer(ctx);
  if (schema->value_dependent_shape) {
    for (const auto& out : node.outputs) {
      if (!out.empty()) graph.set_dynamic(out);
    }
    return;
  }
  if (types.size() < node.outputs.size()) {
    fail("{}: shape function returned {} types for {} outputs", node.describe(), types.size(),
         node.outputs.size());
  }
  for (std::size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i].empty()) continue;
    for (auto d : types[i].shape) {
      if (d < 0) {
        fail("{}: output '{}' would have negative dimension in shape {}", node.describe(),
             node.outputs[i], shape_to_string(types[i].shape));
      }
    }
    TensorInfo& info = graph.add_tensor(node.outputs[i]);
    if (info.has_type && info.is_constant()) {
      fail("{}: output '{}' is already a constant", node.describe(), node.outputs[i]);
    }
    graph.set_type(node.outputs[i], types[i].dtype, types[i].shape);
  }
}

void infer_shapes(Graph& graph) {
  for (std::size_t i : graph.topological_order()) {
    infer_node_types(graph, graph.nodes[i]);
  }
}

}  // namespace orchid
