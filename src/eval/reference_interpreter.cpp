#include "eval/reference_interpreter.hpp"

#include <cstring>
#include <optional>
#include <unordered_map>

#include "eval/reference/reference_kernels.hpp"
#include "ir/op_registry.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

// Executes the branch the condition selects; branch inputs map positionally to the
// node's inputs after the condition.
std::vector<Tensor> run_if(const Node& node, std::span<const Tensor* const> inputs) {
  const Tensor* cond = inputs.empty() ? nullptr : inputs[0];
  if (!cond || cond->numel() != 1) fail("{}: cond must hold one value", node.describe());
  const char* key = cond->get_as_double(0) != 0.0 ? "then_branch" : "else_branch";
  auto it = node.subgraphs.find(key);
  if (it == node.subgraphs.end()) fail("{}: has no {}", node.describe(), key);
  const Graph& branch = *it->second;
  if (branch.inputs.size() + 1 != inputs.size()) {
    fail("{}: {} takes {} outer values, the node passes {}", node.describe(), key,
         branch.inputs.size(), inputs.size() - 1);
  }
  TensorMap feed;
  for (std::size_t k = 0; k < branch.inputs.size(); ++k) {
    if (!inputs[k + 1]) fail("{}: outer value {} is missing", node.describe(), k);
    feed.emplace(branch.inputs[k], *inputs[k + 1]);
  }
  TensorMap results = ReferenceInterpreter(branch).run(feed);
  std::vector<Tensor> outputs;
  for (const auto& name : branch.outputs) outputs.push_back(results.at(name));
  return outputs;
}

// Stacks one scan output's per-iteration values along a new leading axis.
Tensor stack(const Node& node, std::size_t k, const std::vector<Tensor>& parts) {
  if (parts.empty()) return Tensor(DType::F32, {0});  // no iteration: element shape unknown
  Shape shape = parts[0].shape();
  shape.insert(shape.begin(), static_cast<std::int64_t>(parts.size()));
  Tensor out(parts[0].dtype(), shape);
  std::byte* dst = out.raw();
  for (const Tensor& part : parts) {
    if (part.shape() != parts[0].shape() || part.dtype() != parts[0].dtype()) {
      fail("{}: scan output {} changes from {} {} to {} {} between iterations", node.describe(), k,
           dtype_name(parts[0].dtype()), shape_to_string(parts[0].shape()),
           dtype_name(part.dtype()), shape_to_string(part.shape()));
    }
    std::memcpy(dst, part.raw(), part.nbytes());
    dst += part.nbytes();
  }
  return out;
}

// Loop(M, cond, v...): runs body(i, cond, v...) -> (cond, v..., scans...) while i < M
// (when given) and cond (when given) hold. Carried values may change shape per
// iteration; scan outputs are stacked.
std::vector<Tensor> run_loop(const Node& node, std::span<const Tensor* const> inputs) {
  const std::size_t state = loop_state_inputs(node);  // an orchid::Error without a body
  const Graph& body = *node.subgraphs.at("body");
  const std::size_t carried = state - 2;
  if (inputs.size() != body.inputs.size()) {
    fail("{}: body takes {} values, the node passes {}", node.describe(), body.inputs.size(),
         inputs.size());
  }
  const std::size_t scans = body.outputs.size() - 1 - carried;
  // Without a trip count a false condition must end the loop; a model that never says
  // so would hang, so a bound turns that into an error.
  constexpr std::int64_t kMaxIterations = std::int64_t{1} << 24;
  const std::int64_t trip = inputs[0] ? inputs[0]->get_as_int64(0) : kMaxIterations;
  bool cond = inputs[1] ? inputs[1]->get_as_double(0) != 0.0 : true;
  std::vector<Tensor> values;
  for (std::size_t k = 0; k < carried; ++k) {
    if (!inputs[2 + k]) fail("{}: carried value {} is missing", node.describe(), k);
    values.push_back(*inputs[2 + k]);
  }
  std::vector<std::vector<Tensor>> scanned(scans);
  const ReferenceInterpreter interpreter(body);
  std::int64_t i = 0;
  for (; i < trip && cond; ++i) {
    if (i == kMaxIterations) {
      fail("{}: ran {} iterations without a trip count or a false condition", node.describe(), i);
    }
    TensorMap feed;
    feed.emplace(body.inputs[0], Tensor::from_vector<std::int64_t>({}, {i}));
    Tensor c(DType::Bool, {});
    c.values<bool>()[0] = cond;
    feed.emplace(body.inputs[1], std::move(c));
    for (std::size_t k = 0; k < carried; ++k) feed.emplace(body.inputs[2 + k], values[k]);
    for (std::size_t k = state; k < body.inputs.size(); ++k) {
      if (!inputs[k]) fail("{}: outer value '{}' is missing", node.describe(), body.inputs[k]);
      feed.emplace(body.inputs[k], *inputs[k]);
    }
    TensorMap results = interpreter.run(feed);
    cond = results.at(body.outputs[0]).get_as_double(0) != 0.0;
    for (std::size_t k = 0; k < carried; ++k) values[k] = results.at(body.outputs[1 + k]);
    for (std::size_t k = 0; k < scans; ++k) {
      scanned[k].push_back(results.at(body.outputs[1 + carried + k]));
    }
  }
  std::vector<Tensor> outputs = std::move(values);
  for (std::size_t k = 0; k < scans; ++k) outputs.push_back(stack(node, k, scanned[k]));
  outputs.resize(node.outputs.size());
  return outputs;
}

// Output types of a node whose shapes depend on values: its shape function run on a
// scratch graph where every input is a constant holding the value at hand.
std::vector<TensorInfo> types_from_values(const Graph& graph, const Node& node,
                                          std::span<const Tensor* const> inputs) {
  Graph scratch;
  scratch.name = graph.name;
  scratch.opset = graph.opset;
  for (std::size_t i = 0; i < node.inputs.size() && i < inputs.size(); ++i) {
    if (node.inputs[i].empty() || !inputs[i]) continue;
    TensorInfo& info = scratch.set_type(node.inputs[i], inputs[i]->dtype(), inputs[i]->shape());
    info.data = std::shared_ptr<const Tensor>(std::shared_ptr<const Tensor>(), inputs[i]);
  }
  infer_node_types(scratch, node);
  std::vector<TensorInfo> types;
  for (const auto& name : node.outputs) {
    types.push_back(name.empty() ? TensorInfo{} : scratch.tensor(name));
  }
  return types;
}

// Ops that see f16/bf16 as they are: casts convert any dtype exactly, and
// ConstantOfShape copies its value attribute's bytes.
bool computes_half_natively(const Node& node) {
  return node.op_type == "Cast" || node.op_type == "CastLike" ||
         node.op_type == "ConstantOfShape" || node.op_type == "If" || node.op_type == "Loop";
}

std::optional<DType> half_dtype_of(const Graph& graph, const Node& node,
                                   std::span<const Tensor* const> inputs) {
  if (computes_half_natively(node)) return std::nullopt;
  for (const Tensor* t : inputs) {
    if (t && is_half_float(t->dtype())) return t->dtype();
  }
  for (const auto& name : node.outputs) {
    if (name.empty() || !graph.has_tensor(name)) continue;
    const TensorInfo& info = graph.tensor(name);
    if (info.has_type && !info.dynamic && is_half_float(info.dtype)) return info.dtype;
  }
  return std::nullopt;
}

std::vector<Tensor> run_node_kernel(const Graph& graph, const Node& node,
                                    std::span<const Tensor* const> inputs, bool widened);

// f16/bf16 ops: inputs widened to f32, the f32 kernel (f32 accumulation), each output
// rounded to its declared dtype (for data-dependent shapes, the op's half dtype).
std::vector<Tensor> run_widened(const Graph& graph, const Node& node,
                                std::span<const Tensor* const> inputs, DType half) {
  std::vector<Tensor> wide(inputs.size());
  std::vector<const Tensor*> wide_ptrs(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    wide_ptrs[i] = inputs[i];
    if (inputs[i] && is_half_float(inputs[i]->dtype())) {
      wide[i] = inputs[i]->cast(DType::F32);
      wide_ptrs[i] = &wide[i];
    }
  }
  std::vector<Tensor> outputs = run_node_kernel(graph, node, wide_ptrs, true);
  for (std::size_t i = 0; i < outputs.size() && i < node.outputs.size(); ++i) {
    if (node.outputs[i].empty() || outputs[i].dtype() != DType::F32) continue;
    const TensorInfo& info = graph.tensor(node.outputs[i]);
    const DType target = info.has_type && !info.dynamic ? info.dtype : half;
    if (target != DType::F32) outputs[i] = outputs[i].cast(target);
  }
  return outputs;
}

}  // namespace

std::vector<Tensor> run_reference_node(const Graph& graph, const Node& node,
                                       std::span<const Tensor* const> inputs) {
  if (const auto half = half_dtype_of(graph, node, inputs)) {
    return run_widened(graph, node, inputs, *half);
  }
  return run_node_kernel(graph, node, inputs, false);
}

namespace {

std::vector<Tensor> run_node_kernel(const Graph& graph, const Node& node,
                                    std::span<const Tensor* const> inputs, bool widened) {
  if (node.op_type == "If") return run_if(node, inputs);
  if (node.op_type == "Loop") return run_loop(node, inputs);
  if (ShapingKernel sizing = find_shaping_kernel(node.op_type)) return sizing(node, inputs);
  ReferenceKernel kernel = find_reference_kernel(node.op_type);
  if (!kernel) {
    unsupported("{}: unsupported: no reference kernel for op type '{}'", node.describe(),
                node.op_type);
  }
  bool dynamic = false;
  for (const auto& name : node.outputs) dynamic = dynamic || graph.is_dynamic(name);
  std::vector<TensorInfo> dynamic_types;
  if (dynamic) dynamic_types = types_from_values(graph, node, inputs);
  std::vector<Tensor> outputs;
  outputs.reserve(node.outputs.size());
  for (std::size_t i = 0; i < node.outputs.size(); ++i) {
    const std::string& name = node.outputs[i];
    if (name.empty()) {
      outputs.emplace_back();
      continue;
    }
    const TensorInfo& info = dynamic ? dynamic_types[i] : graph.tensor(name);
    if (!info.has_type) fail("{}: output '{}' has no inferred type", node.describe(), name);
    outputs.emplace_back(widened && is_half_float(info.dtype) ? DType::F32 : info.dtype,
                         info.shape);
  }
  kernel(node, inputs, outputs);
  return outputs;
}

}  // namespace

ReferenceInterpreter::ReferenceInterpreter(const Graph& graph)
    : graph_(graph), order_(graph.topological_order()) {}

TensorMap ReferenceInterpreter::run(const TensorMap& inputs) const {
  std::unordered_map<std::string, Tensor> values;
  for (const auto& name : graph_.inputs) {
    auto it = inputs.find(name);
    if (it == inputs.end()) fail("missing value for graph input '{}'", name);
    const TensorInfo& info = graph_.tensor(name);
    if (info.dynamic) {  // an If branch's outer value computed from data
      values.emplace(name, it->second);
      continue;
    }
    if (it->second.dtype() != info.dtype || it->second.shape() != info.shape) {
      fail("graph input '{}' expects {} {} but got {} {}", name, dtype_name(info.dtype),
           shape_to_string(info.shape), dtype_name(it->second.dtype()),
           shape_to_string(it->second.shape()));
    }
    values.emplace(name, it->second);
  }

  // Last node position that reads each tensor, so intermediates can be dropped early.
  std::unordered_map<std::string, std::size_t> last_use;
  for (std::size_t pos = 0; pos < order_.size(); ++pos) {
    for (const auto& in : graph_.nodes[order_[pos]].inputs) last_use[in] = pos;
  }
  for (const auto& out : graph_.outputs) last_use[out] = order_.size();

  auto lookup = [&](const std::string& name) -> const Tensor* {
    if (name.empty()) return nullptr;
    auto it = values.find(name);
    if (it != values.end()) return &it->second;
    const TensorInfo& info = graph_.tensor(name);
    if (info.data) return info.data.get();
    fail("tensor '{}' has no value when it is needed", name);
  };

  for (std::size_t pos = 0; pos < order_.size(); ++pos) {
    const Node& node = graph_.nodes[order_[pos]];
    std::vector<const Tensor*> args;
    args.reserve(node.inputs.size());
    for (const auto& in : node.inputs) args.push_back(lookup(in));
    std::vector<Tensor> results = run_reference_node(graph_, node, args);
    for (std::size_t i = 0; i < node.outputs.size(); ++i) {
      if (!node.outputs[i].empty()) values[node.outputs[i]] = std::move(results[i]);
    }
    for (const auto& in : node.inputs) {
      auto it = last_use.find(in);
      if (it != last_use.end() && it->second == pos) values.erase(in);
    }
  }

  TensorMap outputs;
  for (const auto& name : graph_.outputs) {
    const Tensor* t = lookup(name);
    outputs.emplace(name, *t);
  }
  return outputs;
}

}  // namespace orchid
