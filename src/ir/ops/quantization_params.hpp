// How a QuantizeLinear / DequantizeLinear scale (and zero point) lines up with its data:
// one value for the whole tensor, one per index along `axis`, or (opset 21 blocked form)
// one per `block_size` consecutive indices along `axis`. Shape functions and reference
// kernels share it so both read the attributes the same way.
#pragma once

#include <cstdint>

#include "ir/node.hpp"
#include "ir/shape.hpp"

namespace orchid {

struct QuantLayout {
  enum class Kind { PerTensor, PerAxis, Blocked } kind = Kind::PerTensor;
  std::int64_t axis = 0;        // with PerAxis/Blocked: the data axis the scale follows
  std::int64_t block_size = 0;  // with Blocked
  std::int64_t inner = 1;       // product of the data dimensions after `axis`
  std::int64_t axis_size = 1;   // the data's size along `axis`

  // Index into the scale tensor of data element `i` (row-major).
  std::int64_t scale_index(std::int64_t i) const {
    if (kind == Kind::PerTensor) return 0;
    const std::int64_t along = (i / inner) % axis_size;
    if (kind == Kind::PerAxis) return along;
    const std::int64_t outer = i / (inner * axis_size);
    const std::int64_t blocks = (axis_size + block_size - 1) / block_size;
    return (outer * blocks + along / block_size) * inner + i % inner;
  }
};

// Checks `scale` against `data` and the node's axis/block_size attributes; an
// orchid::Error naming the node when they disagree.
QuantLayout quant_layout(const Node& node, const Shape& data, const Shape& scale);

// Round half to even and clamp, as ONNX QuantizeLinear does for int8/uint8.
float quantize_round(float value);

}  // namespace orchid
