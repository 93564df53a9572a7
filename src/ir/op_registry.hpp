// The table of ops orchid understands. Each op has a schema: its arity and a shape
// function that computes output dtypes and static shapes from the inputs (and from
// constant inputs, e.g. Reshape's target shape). Shape functions also refuse attribute
// values and dtypes orchid does not implement, so bad models fail at import.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.hpp"
#include "ir/op_traits.hpp"
#include "util/error.hpp"

namespace orchid {

// A shape function needed the value of an input that is only known at run time (e.g.
// Reshape's target shape computed from a data-dependent tensor). make_static then
// leaves the node's outputs dynamic instead of refusing the model.
class NotConstantError : public UnsupportedError {
 public:
  using UnsupportedError::UnsupportedError;
};

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
};

class ShapeContext {
 public:
  ShapeContext(const Graph& graph, const Node& node) : graph_(graph), node_(node) {}

  const Node& node() const { return node_; }
  std::int64_t opset() const { return graph_.opset; }
  std::size_t num_inputs() const { return node_.inputs.size(); }
  bool has_input(std::size_t i) const { return node_.has_input(i); }
  // Type of input i; an orchid::Error if it is absent or untyped.
  TensorType input(std::size_t i) const;
  const Shape& input_shape(std::size_t i) const;
  DType input_dtype(std::size_t i) const;
  // Constant value of input i, or nullptr when it is absent or computed at run time.
  const Tensor* constant(std::size_t i) const;
  // Like constant(), but an error naming the node when the input is not a constant.
  const Tensor& required_constant(std::size_t i, const char* what) const;

  // Errors prefixed with the node's description.
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    throw Error(node_.describe() + ": " + fmt::format(format, std::forward<Args>(args)...));
  }
  template <typename... Args>
  [[noreturn]] void unsupported(fmt::format_string<Args...> format, Args&&... args) const {
    throw UnsupportedError(fmt::format("{} (opset {}): unsupported: ", node_.describe(), opset()) +
                           fmt::format(format, std::forward<Args>(args)...));
  }
  // Refuses dtypes outside `allowed` for input i.
  void require_dtype(std::size_t i, std::initializer_list<DType> allowed) const;

 private:
  const Graph& graph_;
  const Node& node_;
};

using ShapeFunction = std::function<std::vector<TensorType>(const ShapeContext&)>;

struct OpSchema {
  std::string op_type;
  int min_inputs = 1;
  int max_inputs = 1;
  int min_outputs = 1;
  int max_outputs = 1;
  ShapeFunction infer;
  // Output sizes depend on input values (NonZero, NonMaxSuppression): `infer` only checks
  // attributes and dtypes; the reference kernel computes the outputs and their shapes.
  bool value_dependent_shape = false;
  // What the later stages know about the op (ir/op_traits.hpp; set by apply_op_traits).
  OpTraits traits{};
};

using OpSchemaTable = std::unordered_map<std::string, OpSchema>;

// nullptr when the op is unknown.
const OpSchema* find_op_schema(const std::string& op_type);
std::vector<std::string> supported_op_types();  // sorted

// Infers the output types of one node and records them in the graph. Unknown ops and
// bad arity are errors naming the node and opset.
void infer_node_types(Graph& graph, const Node& node);
// Whole graph, in topological order.
void infer_shapes(Graph& graph);

}  // namespace orchid
