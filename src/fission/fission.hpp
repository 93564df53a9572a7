// Operator fission: rewrites every ONNX op of a static graph into primitives (see
// primitive.hpp), one rule per op or op family, registered in one table.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.hpp"

namespace orchid {

struct FissionOptions {
  // Also emit, next to softmax(X)·V, the reassociated form exp(X-max)·[V|1] followed by
  // a divide, as an alternative the optimizer may choose (see FissionResult).
  bool softmax_matmul_alternative = true;
  // Rewrite QDQ-wrapped Conv/MatMul into int8 linear primitives (QLinearConv /
  // QLinearMatMul, fission/qdq_linear.hpp); false keeps them in fp32 after dequantization.
  bool int8_linear = true;
};

struct FissionResult {
  Graph graph;  // primitives only, typed, valid; same inputs and outputs as the model
  // primitive node name -> name of the model node it came from
  std::map<std::string, std::string> origin;
  // Alternative computations: tensor computed by an alternative subgraph -> the tensor
  // of the main graph it equals. Consumers may read either. The alternative's nodes are
  // in `graph` too; nothing in the main graph reads the alternative tensors.
  std::map<std::string, std::string> alternatives;
  // What the caller should tell the user (e.g. a QDQ Conv that stays in fp32, and why).
  std::vector<std::string> notes;
  std::size_t model_nodes = 0;  // nodes of the model it came from
};

// `model` must be typed and valid (load_model's result). Ops without a rule that are
// not primitives are refused with an orchid::UnsupportedError naming the node.
FissionResult fission(const Graph& model, const FissionOptions& options = {});

// Registry ops fission handles (a rule, or already a primitive), sorted.
std::vector<std::string> fission_op_types();

}  // namespace orchid
