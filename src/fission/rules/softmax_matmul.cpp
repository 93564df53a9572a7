// The reassociated attention form, offered next to the ordinary one:
//   softmax(X)·V = (e·[V | 1])[..., :D] / (e·[V | 1])[..., D:]   with e = exp(X - max X),
// so the row sum rides along inside the matmul as an extra column of V and the divide
// touches M·D elements instead of M·N. The optimizer chooses; the main graph is unchanged.
#include <algorithm>

#include "fission/rule.hpp"

namespace orchid::fission_detail {

namespace {

// The softmax output's only consumer: a MatMul reading it as its left operand.
const Node* sole_matmul_consumer(const FissionState& state, const std::string& y) {
  const Graph& model = state.model;
  if (std::find(model.outputs.begin(), model.outputs.end(), y) != model.outputs.end()) {
    return nullptr;
  }
  const Node* consumer = nullptr;
  for (const Node& node : state.nodes) {
    if (std::find(node.inputs.begin(), node.inputs.end(), y) == node.inputs.end()) continue;
    if (consumer) return nullptr;
    consumer = &node;
  }
  if (!consumer || consumer->op_type != "MatMul" || consumer->inputs[0] != y ||
      consumer->inputs[1] == y) {
    return nullptr;
  }
  return consumer;
}

}  // namespace

void add_softmax_matmul_alternatives(FissionState& state) {
  const Graph& model = state.model;
  for (const Node& matmul : state.nodes) {
    if (matmul.op_type != "MatMul") continue;
    auto found = state.softmax_exp.find(matmul.inputs[0]);
    if (found == state.softmax_exp.end()) continue;
    if (sole_matmul_consumer(state, matmul.inputs[0]) != &matmul) continue;
    // Only a last-axis softmax over a matrix, times a matrix (not a vector), qualifies.
    const Node* softmax = nullptr;
    for (const Node& node : state.nodes) {
      if (!node.outputs.empty() && node.outputs[0] == matmul.inputs[0]) softmax = &node;
    }
    if (!softmax || softmax->op_type != "Softmax") continue;
    const Shape& x = model.tensor(softmax->inputs[0]).shape;
    const Shape& v = model.tensor(matmul.inputs[1]).shape;
    if (x.size() < 2 || v.size() < 2) continue;
    const std::int64_t fallback = model.opset >= 13 ? -1 : 1;
    const auto rank = static_cast<std::int64_t>(x.size());
    if (normalize_axis(softmax->attr_int("axis", fallback), rank, softmax->describe()) !=
        rank - 1) {
      continue;
    }

    RuleContext ctx(state, matmul);
    const std::string e = found->second;
    const std::string vname = matmul.inputs[1];
    const std::int64_t d = v.back();
    Shape ones_shape = v;
    ones_shape.back() = 1;
    const std::string ones =
        ctx.constant("alt_ones", Tensor::from_vector<double>({}, {1.0}).cast(ctx.dtype(vname)));
    const std::string ones_col =
        ctx.emit("Expand", {ones, ctx.int64s("alt_ones_shape", ones_shape)}, {}, "alt_ones_col");
    const auto last = static_cast<std::int64_t>(v.size()) - 1;
    const std::string v1 = ctx.emit("Concat", {vname, ones_col}, {{"axis", last}}, "alt_concat");
    const std::string p = ctx.emit("MatMul", {e, v1}, {}, "alt_matmul");
    const std::int64_t p_last = ctx.rank(p) - 1;
    const std::string num = ctx.slice(p, {0}, {d}, {p_last}, "alt_num");
    const std::string den = ctx.slice(p, {d}, {d + 1}, {p_last}, "alt_den");
    const std::string y_alt = ctx.emit("Div", {num, den}, {}, "alt_div");
    state.result.alternatives[y_alt] = matmul.outputs[0];
  }
}

}  // namespace orchid::fission_detail
