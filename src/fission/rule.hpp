// What a fission rule sees: the model node it rewrites and an emitter that appends
// typed primitives to the primitive graph. Internal to src/fission/.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fission/fission.hpp"
#include "ir/graph.hpp"
#include "ir/op_registry.hpp"
#include "passes/static_graph.hpp"

namespace orchid::fission_detail {

// Shared by all rules of one fission() call.
struct FissionState {
  const Graph& model;
  FissionResult& result;
  std::vector<Node> nodes;           // the model's nodes in topological order, all named
  std::set<std::string> node_names;  // taken, including every model node's name
  // Softmax output -> its Exp(X - max) tensor, for the softmax·V alternative.
  std::map<std::string, std::string> softmax_exp;
  // QuantizeLinear output -> its saturated float value before the Cast (for QDQ pairs).
  std::map<std::string, std::string> quantized_as_float;
  // Folds past the size limit (RuleContext::append), counted against the model's
  // constants from the first one on.
  std::optional<LargeFolds> large_folds;
};

class RuleContext {
 public:
  RuleContext(FissionState& state, const Node& node) : state_(state), node_(node) {}

  const Node& node() const { return node_; }
  const Graph& model() const { return state_.model; }
  Graph& graph() { return state_.result.graph; }
  FissionState& state() { return state_; }

  // Node input/output names ("" when absent).
  std::string input(std::size_t i) const { return node_.has_input(i) ? node_.inputs[i] : ""; }
  std::string output(std::size_t i) const {
    return i < node_.outputs.size() ? node_.outputs[i] : "";
  }
  std::int64_t rank(const std::string& tensor) const {
    return static_cast<std::int64_t>(shape(tensor).size());
  }
  // Type of a tensor already in the primitive graph.
  const Shape& shape(const std::string& tensor) const;
  DType dtype(const std::string& tensor) const;
  // Constant value, or nullptr when computed at run time.
  const Tensor* constant_value(const std::string& tensor) const;
  // The type the model records for its tensor (e.g. a node output's inferred shape).
  const Shape& model_shape(const std::string& tensor) const;

  // Appends a primitive. `what` makes the names "<node>/fission/<what>"; `out` forces
  // the output's name (a model tensor). Nodes whose inputs are all constant are folded
  // into a constant instead. Returns the output tensor name.
  std::string emit(const std::string& op, std::vector<std::string> inputs,
                   std::map<std::string, Attribute> attributes, const std::string& what,
                   const std::string& out = "");
  // Copies the model node unchanged (it is already a primitive).
  void pass_through();
  // `out` equals `in`: an Identity that fission() removes at the end.
  void alias(const std::string& out, const std::string& in);

  // New constants named after the node.
  std::string constant(const std::string& what, Tensor value);
  std::string scalar(const std::string& what, double value, DType dtype);
  std::string int64s(const std::string& what, const std::vector<std::int64_t>& values);

  // Helpers that emit canonical primitives. Axes must be non-negative.
  std::string reshape(const std::string& x, const Shape& shape, const std::string& what,
                      const std::string& out = "");
  std::string reduce(const std::string& op, const std::string& x,
                     const std::vector<std::int64_t>& axes, bool keepdims, const std::string& what,
                     const std::string& out = "");
  std::string transpose(const std::string& x, const std::vector<std::int64_t>& perm,
                        const std::string& what, const std::string& out = "");
  std::string slice(const std::string& x, const std::vector<std::int64_t>& starts,
                    const std::vector<std::int64_t>& ends, const std::vector<std::int64_t>& axes,
                    const std::string& what, const std::string& out = "");
  std::string cast(const std::string& x, DType to, const std::string& what,
                   const std::string& out = "");

  // [C] per-channel vector -> [C,1,...,1] broadcasting against an N x C x ... tensor.
  std::string channel_vector(const std::string& v, std::int64_t data_rank, const std::string& what);

  // Shared by the normalization rules so they emit the same primitives under the same
  // names. Axes [first, rank):
  static std::vector<std::int64_t> axes_from(std::int64_t first, std::int64_t rank);
  // ... with `first` the node's "axis" attribute (default -1) against x (LayerNorm, RMSNorm).
  std::vector<std::int64_t> axes_from_axis_attribute(const std::string& x) const;
  // (x - mean) / sqrt(var + epsilon) over `axes`, epsilon the node's attribute (default
  // 1e-5) in `dtype`; also returns the mean and the std for the statistics outputs.
  struct Standardized {
    std::string mean;
    std::string std_dev;
    std::string normalized;
  };
  Standardized standardize(const std::string& x, const std::vector<std::int64_t>& axes,
                           DType dtype);

  [[noreturn]] void unsupported(const std::string& why) const;

 private:
  std::string append(Node node);
  std::string fresh_tensor(const std::string& what);
  std::string fresh_node(const std::string& what);

  FissionState& state_;
  const Node& node_;
  bool own_name_used_ = false;  // the model node's name is reserved for it
};

using FissionRule = std::function<void(RuleContext&)>;
using RuleTable = std::map<std::string, FissionRule>;

// One registration function per rules/ file; fission.cpp calls them all.
void register_activation_rules(RuleTable& table);      // HardSigmoid, HardSwish, Gelu, Mish...
void register_attention_rules(RuleTable& table);       // Attention, RotaryEmbedding
void register_batch_norm_rules(RuleTable& table);      // BatchNormalization
void register_col2im_rules(RuleTable& table);          // Col2Im (a layout primitive)
void register_constant_rules(RuleTable& table);        // Shape, Size, ConstantOfShape, ...
void register_conv_rules(RuleTable& table);            // Conv, ConvTranspose (bias)
void register_depth_to_space_rules(RuleTable& table);  // DepthToSpace, SpaceToDepth
void register_elementwise_rules(RuleTable& table);     // Sum, Mean, Max, Min, CastLike
void register_gemm_rules(RuleTable& table);            // Gemm
void register_group_rms_norm_rules(RuleTable& table);  // GroupNormalization, RMSNormalization
void register_instance_norm_rules(RuleTable& table);   // InstanceNormalization
void register_layer_norm_rules(RuleTable& table);      // LayerNormalization
void register_lp_norm_rules(RuleTable& table);         // LpNormalization
void register_pooling_rules(RuleTable& table);         // GlobalAveragePool, GlobalMaxPool
void register_quantization_rules(RuleTable& table);    // Q/DQ, QLinear*, *Integer
void register_recurrent_rules(RuleTable& table);       // LSTM, GRU, RNN (unrolled)
void register_reduce_rules(RuleTable& table);          // Reduce*, TopK
void register_shape_op_rules(RuleTable& table);  // Reshape, Flatten, Squeeze, Split, Tile, ...
void register_softmax_rules(RuleTable& table);   // Softmax, LogSoftmax, Hardmax

// After all nodes: adds the reassociated softmax(X)·V subgraphs (softmax_matmul.cpp).
void add_softmax_matmul_alternatives(FissionState& state);

}  // namespace orchid::fission_detail
