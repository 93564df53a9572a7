// Rewrites op forms of ONNX opsets 7..28 into the opset-17 semantics the IR follows
// (attribute operands become constant inputs, Upsample becomes Resize, old Softmax's
// 2-D coercion becomes Flatten/Softmax/Reshape, legacy attributes are dropped).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.hpp"

namespace orchid {

// What the proto says about tensors before shape inference (value_info, inputs,
// initializers): used where a rewrite needs a dtype (Clip bounds) or a rank (Softmax).
struct TypeHints {
  std::map<std::string, DType> dtypes;
  std::map<std::string, std::size_t> ranks;
};

// `from_opset` is the model's default-domain opset; `file` names errors. New constants
// and nodes get names derived from the rewritten node, unique in the graph.
void upgrade_to_opset17(Graph& graph, std::int64_t from_opset, const TypeHints& hints,
                        const std::string& file);

}  // namespace orchid
