// The fission driver: walks the model in topological order, rewrites each node with its
// rule (or copies it when it already is a primitive), adds the softmax·V alternatives,
// then removes the Identity nodes that aliasing rules leave behind.
#include "fission/fission.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "fission/primitive.hpp"
#include "fission/qdq_linear.hpp"
#include "fission/rule.hpp"
#include "util/error.hpp"

namespace orchid {

namespace fission_detail {
namespace {

const RuleTable& rule_table() {
  static const RuleTable table = [] {
    RuleTable t;
    register_activation_rules(t);
    register_attention_rules(t);
    register_batch_norm_rules(t);
    register_col2im_rules(t);
    register_constant_rules(t);
    register_conv_rules(t);
    register_depth_to_space_rules(t);
    register_elementwise_rules(t);
    register_gemm_rules(t);
    register_instance_norm_rules(t);
    register_group_rms_norm_rules(t);
    register_layer_norm_rules(t);
    register_lp_norm_rules(t);
    register_pooling_rules(t);
    register_quantization_rules(t);
    register_recurrent_rules(t);
    register_reduce_rules(t);
    register_shape_op_rules(t);
    register_softmax_rules(t);
    return t;
  }();
  return table;
}

// A bare op type as a node: enough for is_primitive's op-set lookup.
bool op_is_primitive(const std::string& op) {
  Node node;
  node.op_type = op;
  node.inputs = {"a", "b"};
  node.outputs = {"y"};
  return is_primitive(node);
}

void rename_everywhere(FissionResult& r, const std::string& from, const std::string& to) {
  for (Node& node : r.graph.nodes) {
    for (auto& in : node.inputs) {
      if (in == from) in = to;
    }
    for (auto& out : node.outputs) {
      if (out == from) out = to;
    }
  }
  std::map<std::string, std::string> alternatives;
  for (const auto& [alt, main] : r.alternatives) {
    alternatives.emplace(alt == from ? to : alt, main == from ? to : main);
  }
  r.alternatives = std::move(alternatives);
}

// Identity nodes only mark aliases. Each is removed by reading its input directly, or,
// when its output is a graph output (whose name must stay), by renaming its input's
// producer. It survives only where neither works (a graph input or constant passed
// straight to an output, or one tensor listed as two outputs).
void remove_identities(FissionResult& r) {
  Graph& g = r.graph;
  const std::unordered_set<std::string> outputs(g.outputs.begin(), g.outputs.end());
  const std::unordered_set<std::string> inputs(g.inputs.begin(), g.inputs.end());
  for (std::size_t i = 0; i < g.nodes.size();) {
    const Node& node = g.nodes[i];
    if (node.op_type != "Identity") {
      ++i;
      continue;
    }
    const std::string a = node.inputs[0];
    const std::string b = node.outputs[0];
    const bool a_produced = !inputs.count(a) && !g.is_constant(a);
    if (!outputs.count(b)) {
      r.origin.erase(node.name);
      g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(i));
      rename_everywhere(r, b, a);
      g.erase_tensor(b);
    } else if (a_produced && !outputs.count(a)) {
      r.origin.erase(node.name);
      g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(i));
      rename_everywhere(r, a, b);
      g.erase_tensor(a);
    } else {
      ++i;
    }
  }
}

// Constants left unread (folded BatchNorm statistics, a Gemm's B before transposing).
void erase_unused_constants(Graph& g) {
  std::unordered_set<std::string> used(g.outputs.begin(), g.outputs.end());
  for (const Node& node : g.nodes) used.insert(node.inputs.begin(), node.inputs.end());
  std::vector<std::string> unused;
  for (const auto& [name, info] : g.tensors()) {
    if (info.is_constant() && !used.count(name)) unused.push_back(name);
  }
  for (const auto& name : unused) g.erase_tensor(name);
}

}  // namespace
}  // namespace fission_detail

std::vector<std::string> fission_op_types() {
  std::vector<std::string> ops;
  for (const auto& op : supported_op_types()) {
    // Ops whose output shapes depend on values never reach the rules: a graph holding
    // them (unfolded) is refused by the static-shape check below.
    if (fission_detail::rule_table().count(op) || fission_detail::op_is_primitive(op) ||
        find_op_schema(op)->value_dependent_shape) {
      ops.push_back(op);
    }
  }
  return ops;
}

FissionResult fission(const Graph& model, const FissionOptions& options) {
  using namespace fission_detail;
  model.require_static_shapes("operator fission (kernel orchestration, the plan executor)");
  FissionResult result;
  result.model_nodes = model.nodes.size();
  Graph& g = result.graph;
  g.name = model.name;
  g.opset = model.opset;
  g.inputs = model.inputs;
  g.outputs = model.outputs;
  g.metadata = model.metadata;
  for (const auto& [name, info] : model.tensors()) {
    if (info.is_constant() ||
        std::find(model.inputs.begin(), model.inputs.end(), name) != model.inputs.end()) {
      g.add_tensor(name) = info;
    }
  }

  FissionState state{model, result, {}, {}, {}, {}, {}};
  // Names are the key of `origin`; unnamed model nodes get one from op type and position.
  std::vector<Node>& nodes = state.nodes;
  // Model names are reserved: each node's own name goes to its first primitive.
  for (const Node& node : model.nodes) state.node_names.insert(node.name);
  for (std::size_t i : model.topological_order()) {
    Node node = model.nodes[i];
    if (node.name.empty()) {
      std::string name = fmt::format("{}_{}", node.op_type, i);
      for (int k = 1; state.node_names.count(name); ++k) {
        name = fmt::format("{}_{}_{}", node.op_type, i, k);
      }
      node.name = name;
      state.node_names.insert(name);
    }
    nodes.push_back(std::move(node));
  }

  if (options.int8_linear) {
    std::map<std::string, Tensor> int8_biases;
    fuse_qdq_linear(model, nodes, result.notes, int8_biases);
    for (auto& [name, value] : int8_biases) g.set_constant(name, std::move(value));
  }

  const RuleTable& rules = rule_table();
  for (const Node& node : nodes) {
    RuleContext ctx(state, node);
    if (!node.domain.empty()) {
      ctx.unsupported(fmt::format("domain '{}'", node.domain));
    }
    auto rule = rules.find(node.op_type);
    if (rule != rules.end()) {
      rule->second(ctx);
    } else if (op_is_primitive(node.op_type)) {
      ctx.pass_through();
    } else {
      ctx.unsupported("no fission rule for this op");
    }
  }
  if (options.softmax_matmul_alternative) add_softmax_matmul_alternatives(state);

  remove_identities(result);
  erase_unused_constants(g);
  g.validate();
  for (const Node& node : g.nodes) {
    if (!is_primitive(node)) fail("fission left {}, which is not a primitive", node.describe());
  }
  for (const auto& out : g.outputs) {
    const TensorInfo& a = g.tensor(out);
    const TensorInfo& b = model.tensor(out);
    if (a.dtype != b.dtype || a.shape != b.shape) {
      fail("fission changed the type of output '{}' from {} {} to {} {}", out, dtype_name(b.dtype),
           shape_to_string(b.shape), dtype_name(a.dtype), shape_to_string(a.shape));
    }
  }
  return result;
}

}  // namespace orchid
