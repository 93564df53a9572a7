#include "fission/primitive.hpp"

#include <string>

#include "util/error.hpp"

namespace orchid {

namespace {

// One canonical form per computation: variadic ops only with two inputs, Conv and
// ConvTranspose without bias, MaxPool and TopK without their Indices outputs. Ops that
// are not primitives (Softmax, norms, Gemm, Squeeze, Split, ...) are rewritten by a
// fission rule.
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
  const OpTraits& traits = op_traits(node.op_type);
  if (!traits.primitive) return false;
  // Binary only (Max and Min are variadic in ONNX); linear ops without their bias.
  if (traits.fused.kind == FusedForm::Kind::Binary && node.inputs.size() != 2) return false;
  // (QLinearConv's int32 bias is part of the int8 primitive: its requantization needs it.)
  if (traits.primitive == PrimitiveClass::Linear && node.has_input(2) &&
      node.op_type.rfind("QLinear", 0) != 0) {
    return false;
  }
  if (present_outputs(node) != 1 || node.outputs.empty() || node.outputs[0].empty()) return false;
  return true;
}

PrimitiveClass primitive_class(const Node& node) {
  if (!is_primitive(node)) fail("{} is not a primitive", node.describe());
  return *op_traits(node.op_type).primitive;
}

std::map<PrimitiveClass, std::size_t> primitive_class_histogram(const Graph& graph) {
  std::map<PrimitiveClass, std::size_t> histogram;
  for (const Node& node : graph.nodes) ++histogram[primitive_class(node)];
  return histogram;
}

}  // namespace orchid
