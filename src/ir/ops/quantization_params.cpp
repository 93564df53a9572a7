#include "ir/ops/quantization_params.hpp"

#include <cmath>

#include "util/error.hpp"

namespace orchid {

QuantLayout quant_layout(const Node& node, const Shape& data, const Shape& scale) {
  QuantLayout q;
  const std::int64_t block = node.attr_int("block_size", 0);
  if (block < 0) fail("{}: block_size must be >= 0, got {}", node.describe(), block);
  const bool scalar = shape_numel(scale) == 1 && scale.size() <= 1;
  if (scalar && block == 0) return q;
  const auto rank = static_cast<std::int64_t>(data.size());
  if (rank == 0) fail("{}: a per-axis scale needs data of rank >= 1", node.describe());
  q.axis = normalize_axis(node.attr_int("axis", 1), rank, node.describe());
  q.axis_size = data[static_cast<std::size_t>(q.axis)];
  for (std::size_t d = static_cast<std::size_t>(q.axis) + 1; d < data.size(); ++d) {
    q.inner *= data[d];
  }
  if (block == 0) {
    if (scale.size() != 1 || scale[0] != q.axis_size) {
      fail(
          "{}: scale of shape {} is neither a scalar nor one value per index of axis {} "
          "(size {})",
          node.describe(), shape_to_string(scale), q.axis, q.axis_size);
    }
    q.kind = QuantLayout::Kind::PerAxis;
    return q;
  }
  Shape expected = data;
  expected[static_cast<std::size_t>(q.axis)] = (q.axis_size + block - 1) / block;
  if (scale != expected) {
    fail("{}: blocked scale (block_size {}) must have shape {}, got {}", node.describe(), block,
         shape_to_string(expected), shape_to_string(scale));
  }
  q.kind = QuantLayout::Kind::Blocked;
  q.block_size = block;
  return q;
}

float quantize_round(float value) {
  return std::nearbyint(value);  // the default rounding mode: half to even
}

}  // namespace orchid
