// Conversion between onnx::AttributeProto and orchid::Attribute.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "ir/node.hpp"

namespace orchid {

// `context` names file, node, op type and opset for error messages. Subgraphs (GRAPH,
// GRAPHS), sparse tensors and type protos are UnsupportedError.
Attribute attribute_from_proto(const onnx::AttributeProto& proto, const std::string& base_dir,
                               const std::string& context);
void attribute_to_proto(const std::string& name, const Attribute& value,
                        onnx::AttributeProto& proto);

}  // namespace orchid
