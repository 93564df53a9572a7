#include "eval/random_inputs.hpp"

#include <algorithm>

#include "util/random.hpp"

namespace orchid {

namespace {

// Smallest table size over all Gathers that use `input` as indices; 0 if none does.
std::int64_t index_bound(const Graph& graph, const std::string& input) {
  std::int64_t bound = 0;
  for (const Node& node : graph.nodes) {
    if (node.op_type != "Gather" || node.inputs.size() < 2 || node.inputs[1] != input) continue;
    const TensorInfo& data = graph.tensor(node.inputs[0]);
    if (!data.has_type || data.shape.empty()) continue;
    const auto rank = static_cast<std::int64_t>(data.shape.size());
    std::int64_t axis = node.attr_int("axis", 0);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) continue;
    const std::int64_t dim = data.shape[static_cast<std::size_t>(axis)];
    bound = bound == 0 ? dim : std::min(bound, dim);
  }
  return bound;
}

}  // namespace

TensorMap make_random_inputs(const Graph& graph, std::uint64_t seed) {
  TensorMap inputs;
  for (std::size_t k = 0; k < graph.inputs.size(); ++k) {
    const std::string& name = graph.inputs[k];
    const TensorInfo& info = graph.tensor(name);
    SplitMix64 rng(seed ^ fnv1a64(name));
    Tensor value(DType::F64, info.shape);
    double* v = value.data<double>();
    const std::int64_t n = value.numel();
    if (is_float(info.dtype)) {
      for (std::int64_t i = 0; i < n; ++i) v[i] = rng.uniform(-1.0f, 1.0f);
    } else if (info.dtype == DType::Bool) {
      for (std::int64_t i = 0; i < n; ++i) v[i] = 1.0;
    } else {
      const std::int64_t bound = index_bound(graph, name);
      for (std::int64_t i = 0; i < n; ++i) {
        v[i] = bound > 0 ? static_cast<double>(rng.below(static_cast<std::uint64_t>(bound))) : 1.0;
      }
    }
    inputs.emplace(name, value.cast(info.dtype));
  }
  return inputs;
}

}  // namespace orchid
