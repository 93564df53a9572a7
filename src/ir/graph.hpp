// The graph IR every stage shares: named tensors (with static types and optional
// constant data), nodes, and the graph's inputs and outputs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/node.hpp"
#include "ir/tensor.hpp"

namespace orchid {

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  bool has_type = false;  // false until the importer or shape inference sets dtype+shape
  // Shape (and dtype) decided only at run time by tensor values: outputs of NonZero,
  // NonMaxSuppression, an If with a run-time condition, and everything computed from
  // them. Such a tensor has no type here; the reference interpreter infers it per run.
  bool dynamic = false;
  // Set for weights and folded constants; shared because graphs are copied freely.
  std::shared_ptr<const Tensor> data;

  bool is_constant() const { return data != nullptr; }
};

class Graph {
 public:
  std::string name;
  std::int64_t opset = 17;
  std::vector<Node> nodes;
  std::vector<std::string> inputs;  // runtime inputs (constants are not listed here)
  std::vector<std::string> outputs;
  std::map<std::string, std::string> metadata;

  // Tensor lookup; `tensor` throws an orchid::Error naming the tensor if it is unknown.
  bool has_tensor(const std::string& name) const { return tensors_.count(name) != 0; }
  TensorInfo& tensor(const std::string& name);
  const TensorInfo& tensor(const std::string& name) const;
  // Inserts or returns the tensor of that name.
  TensorInfo& add_tensor(const std::string& name);
  // `base`, or `base_1`, `base_2`, ...: the first name no tensor has yet (for tensors a
  // pass adds).
  std::string fresh_tensor_name(const std::string& base) const;
  TensorInfo& set_type(const std::string& name, DType dtype, Shape shape);
  TensorInfo& set_constant(const std::string& name, Tensor value);
  TensorInfo& set_dynamic(const std::string& name);
  // Drops the value of constant `name` if it is still `expected`, for a graph whose
  // values are not read again once a consumer holds its own copy (the plan executor's
  // packed weights). The tensor stays a constant of its type; its data becomes a view of
  // nothing (null), so reading it is a visible bug rather than a wrong value. Returns
  // whether it was dropped.
  bool release_constant(const std::string& name, const Tensor* expected);
  // Drops the value of every weight (release_constant), for a graph whose values are not
  // read again: those another graph shares stay alive through it.
  void release_constants();
  void erase_tensor(const std::string& name) { tensors_.erase(name); }
  const std::unordered_map<std::string, TensorInfo>& tensors() const { return tensors_; }

  bool is_constant(const std::string& name) const;
  bool is_dynamic(const std::string& name) const;
  // Control flow, or an output whose shape depends on tensor values.
  bool is_dynamic_node(const Node& node) const;
  // The first node (in node order) whose outputs have data-dependent shapes, or nullptr
  // when the graph is fully static. Optimizers need static shapes and refuse otherwise.
  const Node* first_dynamic_node() const;
  // An orchid::Error naming `what` (e.g. "kernel orchestration") and the first node
  // with data-dependent shapes, when there is one.
  void require_static_shapes(const std::string& what) const;
  // Constant tensors that some node consumes, sorted by name: the graph's weights.
  std::vector<std::string> weights() const;

  // Node index producing each tensor / indices consuming it.
  std::unordered_map<std::string, std::size_t> producers() const;
  std::unordered_map<std::string, std::vector<std::size_t>> consumers() const;

  // Kahn's order, ties broken by original position (deterministic). Throws on a cycle.
  std::vector<std::size_t> topological_order() const;
  // Reorders `nodes` topologically.
  void sort_topologically();
  // Drops nodes whose outputs no graph output needs, and tensors no one uses.
  void remove_dead_nodes();

  // Structural checks: duplicate node names or producers, dangling inputs, cycles,
  // outputs never produced, constant data disagreeing with the recorded shape.
  void validate() const;

  // Human-readable listing for debugging.
  std::string to_string() const;

 private:
  std::unordered_map<std::string, TensorInfo> tensors_;
};

// A Loop body's first inputs are its declared state (iteration number, condition,
// carried values); the rest are outer values it reads, appended by the importer, which
// records the state count in the body's metadata under this key.
inline constexpr const char* kLoopStateInputsKey = "orchid.loop_state_inputs";
std::size_t loop_state_inputs(const Node& loop);

}  // namespace orchid
