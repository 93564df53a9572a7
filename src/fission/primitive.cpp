#include "fission/primitive.hpp"

#include <string>
#include <unordered_map>

#include "ir/ops/op_families.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

// One canonical form per computation: variadic ops only with two inputs, Conv and
// ConvTranspose without bias, MaxPool and TopK without their Indices outputs. Ops left
// out here (Softmax, norms, Gemm, Squeeze, Split, ...) are rewritten by a fission rule.
const std::unordered_map<std::string, PrimitiveClass>& primitive_table() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::string, PrimitiveClass>;
    // Every op of the elementwise family is a primitive, except the few whose
    // canonical form is other primitives (a fission rule rewrites them). Taking the
    // names from the family's registration keeps the two lists from drifting apart.
    OpSchemaTable elementwise;
    register_elementwise_ops(elementwise);
    for (const auto& [op, schema] : elementwise) {
      if (op == "HardSigmoid" || op == "HardSwish" || op == "Sum" || op == "Mean" ||
          op == "CastLike") {
        continue;
      }
      (*t)[op] = PrimitiveClass::Elementwise;
    }
    // RoiAlign pools bilinear samples per bin, a data-dependent window.
    for (const char* op :
         {"ReduceSum", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ArgMax", "ArgMin",
          "TopK", "MaxPool", "AveragePool", "RoiAlign", "Expand", "CumSum"}) {
      (*t)[op] = PrimitiveClass::ReduceBroadcast;
    }
    for (const char* op :
         {"Transpose", "Reshape", "Slice", "Concat", "Pad", "Gather", "Resize", "Identity",
          "ScatterND", "GatherElements", "GatherND", "ScatterElements"}) {
      (*t)[op] = PrimitiveClass::Layout;
    }
    for (const char* op : {"MatMul", "Conv", "ConvTranspose"}) {
      (*t)[op] = PrimitiveClass::Linear;
    }
    return t;
  }();
  return *table;
}

std::size_t present_outputs(const Node& node) {
  std::size_t n = 0;
  for (const auto& out : node.outputs) n += out.empty() ? 0 : 1;
  return n;
}

}  // namespace

std::string_view primitive_class_name(PrimitiveClass c) {
  switch (c) {
    case PrimitiveClass::Elementwise:
      return "elementwise";
    case PrimitiveClass::ReduceBroadcast:
      return "reduce/broadcast";
    case PrimitiveClass::Layout:
      return "layout";
    case PrimitiveClass::Linear:
      return "linear";
  }
  return "?";
}

bool is_primitive(const Node& node) {
  if (!node.domain.empty()) return false;
  const auto& table = primitive_table();
  if (!table.count(node.op_type)) return false;
  const std::string& op = node.op_type;
  if ((op == "Max" || op == "Min") && node.inputs.size() != 2) return false;
  if ((op == "Conv" || op == "ConvTranspose") && node.has_input(2)) return false;
  if (present_outputs(node) != 1 || node.outputs.empty() || node.outputs[0].empty()) return false;
  return true;
}

PrimitiveClass primitive_class(const Node& node) {
  if (!is_primitive(node)) fail("{} is not a primitive", node.describe());
  return primitive_table().at(node.op_type);
}

std::map<PrimitiveClass, std::size_t> primitive_class_histogram(const Graph& graph) {
  std::map<PrimitiveClass, std::size_t> histogram;
  for (const Node& node : graph.nodes) ++histogram[primitive_class(node)];
  return histogram;
}

}  // namespace orchid
