// The dialect expression of one elementwise primitive applied to argument expressions
// (already of their input dtypes); the result has the node's output dtype.
#pragma once

#include <string>
#include <vector>

#include "ir/dtype.hpp"
#include "ir/node.hpp"

namespace orchid::codegen {

// True for the elementwise ops elementwise_expr() writes.
bool has_elementwise_expr(const std::string& op_type);

std::string elementwise_expr(const Node& node, const std::vector<std::string>& args,
                             const std::vector<DType>& arg_types, DType out);

}  // namespace orchid::codegen
