// Geometry of the attention-family ops (Attention and RotaryEmbedding, opset 23), read
// once from a node and its input shapes and shared by the shape functions, the
// reference kernels and the fission rules, so all three agree. Every function throws
// orchid::Error naming the node for malformed shapes and UnsupportedError for the forms
// orchid does not implement.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/node.hpp"
#include "ir/shape.hpp"

namespace orchid {

// Attention with Q, K, V of rank 3 ([B, S, heads * head]) or 4 ([B, heads, S, head]).
struct AttentionGeometry {
  bool rank3 = false;
  std::int64_t batch = 0, q_heads = 0, kv_heads = 0;
  std::int64_t q_len = 0, kv_len = 0;
  std::int64_t head = 0, v_head = 0;  // Q/K head size, V head size
  double scale = 0;                   // applied to Q K^T (1 / sqrt(head) by default)
  double softcap = 0;                 // softcap * tanh(x / softcap) when > 0
  bool causal = false;
  // The mask broadcast to [B, q_heads, q_len, mask_len] (mask_len <= kv_len; keys past it
  // are masked), right-aligned like numpy; empty when there is no mask.
  Shape mask_shape;
  bool mask_is_bool = false;
  Shape output_shape() const;
};

// `shapes[i]` is input i's shape (empty vector entries for absent inputs are not read).
AttentionGeometry attention_geometry(const Node& node, const std::vector<Shape>& shapes,
                                     bool mask_is_bool);

// RotaryEmbedding with input [B, heads, S, head] or [B, S, heads * head].
struct RotaryGeometry {
  bool rank3 = false;
  std::int64_t batch = 0, heads = 0, seq = 0, head = 0;
  std::int64_t rotary_dim = 0;  // the first rotary_dim features of each head rotate
  bool interleaved = false;     // pairs (2i, 2i+1) instead of halves (i, i + dim/2)
  bool position_ids = false;    // caches [max_pos, dim/2] indexed by ids [B, S]
};

RotaryGeometry rotary_geometry(const Node& node, const std::vector<Shape>& shapes);

}  // namespace orchid
