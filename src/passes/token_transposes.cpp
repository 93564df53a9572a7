#include "passes/token_transposes.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace orchid {

namespace {

bool is_transpose(const Node& n, const std::vector<std::int64_t>& perm) {
  return n.op_type == "Transpose" && n.inputs.size() == 1 && n.outputs.size() == 1 &&
         n.attr_ints("perm", {}) == perm;
}

bool is_reshape(const Node& n) {
  return n.op_type == "Reshape" && n.outputs.size() == 1 && n.has_input(0);
}

// Turns `n` into a Reshape of `x` to `shape`, writing `y`.
void make_reshape(Graph& g, Node& n, const std::string& x, const Shape& shape,
                  const std::string& y) {
  const std::string shape_name = g.fresh_tensor_name(y + "_shape");
  g.set_constant(shape_name,
                 Tensor::from_vector<std::int64_t>({static_cast<std::int64_t>(shape.size())},
                                                   std::vector<std::int64_t>(shape)));
  n.op_type = "Reshape";
  n.attributes.clear();
  n.inputs = {x, shape_name};
  n.outputs = {y};
}

// Turns `n` into a Transpose of `x` by `perm`, writing `y`.
void make_transpose(Node& n, const std::string& x, const std::vector<std::int64_t>& perm,
                    const std::string& y) {
  n.op_type = "Transpose";
  n.attributes.clear();
  n.attributes["perm"] = perm;
  n.inputs = {x};
  n.outputs = {y};
}

}  // namespace

TokenTransposeStats regroup_token_transposes(Graph& graph) {
  TokenTransposeStats stats;
  const auto consumers = graph.consumers();
  const std::set<std::string> outputs(graph.outputs.begin(), graph.outputs.end());
  // The only reader of `t`, when it has exactly one and is not a graph output.
  auto sole_reader = [&](const std::string& t) -> Node* {
    auto it = consumers.find(t);
    if (outputs.count(t) || it == consumers.end() || it->second.size() != 1) return nullptr;
    return &graph.nodes[it->second[0]];
  };
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    Node& first = graph.nodes[i];
    if (first.outputs.size() != 1 || !first.subgraphs.empty()) continue;
    const std::string mid = first.outputs[0];
    Node* second = sole_reader(mid);
    if (!second || second->inputs[0] != mid) continue;
    const std::string x = first.inputs.empty() ? "" : first.inputs[0];
    if (x.empty() || graph.is_dynamic(x) || graph.is_dynamic(mid)) continue;
    const TensorInfo& in = graph.tensor(x);
    const std::string y = second->outputs.empty() ? "" : second->outputs[0];
    if (y.empty() || graph.is_dynamic(y)) continue;
    const Shape out = graph.tensor(y).shape;
    const DType dtype = in.dtype;
    if (is_transpose(first, {0, 2, 1}) && is_reshape(*second) && in.shape.size() == 3 &&
        out.size() == 4) {
      // tokens [B, N, C] -> [B, C, N] -> [B, C, H, W]
      const Shape& s = in.shape;
      if (out[0] != s[0] || out[1] != s[2] || out[2] * out[3] != s[1]) continue;
      const Shape nhwc{s[0], out[2], out[3], s[2]};
      const std::string tokens_nhwc = graph.fresh_tensor_name(y + "_nhwc");
      graph.set_type(tokens_nhwc, dtype, nhwc);
      make_reshape(graph, first, x, nhwc, tokens_nhwc);
      make_transpose(*second, tokens_nhwc, {0, 3, 1, 2}, y);
    } else if (is_reshape(first) && is_transpose(*second, {0, 2, 1}) && in.shape.size() == 4 &&
               out.size() == 3) {
      // image [B, C, H, W] -> [B, C, N] -> [B, N, C]
      const Shape& s = in.shape;
      if (out[0] != s[0] || out[2] != s[1] || out[1] != s[2] * s[3]) continue;
      const Shape nhwc{s[0], s[2], s[3], s[1]};
      const std::string image_nhwc = graph.fresh_tensor_name(x + "_nhwc");
      graph.set_type(image_nhwc, dtype, nhwc);
      make_transpose(first, x, {0, 2, 3, 1}, image_nhwc);
      make_reshape(graph, *second, image_nhwc, out, y);
    } else {
      continue;
    }
    ++stats.rewritten;
  }
  if (stats.rewritten > 0) graph.remove_dead_nodes();
  return stats;
}

}  // namespace orchid
