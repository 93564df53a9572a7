#include "ir/ops/attention_params.hpp"

#include <cmath>

#include "util/error.hpp"

namespace orchid {

namespace {

// Splits [B, S, heads * head] or reads [B, heads, S, head]: {B, heads, S, head}.
std::vector<std::int64_t> heads_view(const Node& node, const Shape& s, bool rank3,
                                     std::int64_t heads, const char* what) {
  if (!rank3) return {s[0], s[1], s[2], s[3]};
  if (heads <= 0 || s[2] % heads != 0) {
    fail("{}: {} hidden size {} is not a multiple of its head count {}", node.describe(), what,
         s[2], heads);
  }
  return {s[0], heads, s[1], s[2] / heads};
}

}  // namespace

Shape AttentionGeometry::output_shape() const {
  if (rank3) return {batch, q_len, q_heads * v_head};
  return {batch, q_heads, q_len, v_head};
}

AttentionGeometry attention_geometry(const Node& node, const std::vector<Shape>& shapes,
                                     bool mask_is_bool) {
  const char* refused_inputs[] = {nullptr,    nullptr,      nullptr,           nullptr,
                                  "past_key", "past_value", "nonpad_kv_seqlen"};
  for (std::size_t i = 4; i < node.inputs.size() && i < 7; ++i) {
    if (node.has_input(i)) unsupported("{}: input {} ({})", node.describe(), i, refused_inputs[i]);
  }
  const char* refused_outputs[] = {nullptr, "present_key", "present_value", "qk_matmul_output"};
  for (std::size_t i = 1; i < node.outputs.size() && i < 4; ++i) {
    if (!node.outputs[i].empty()) {
      unsupported("{}: output {} ({})", node.describe(), i, refused_outputs[i]);
    }
  }
  for (const char* key : {"left_window_size", "right_window_size"}) {
    if (node.attr_int(key, -1) != -1) unsupported("{}: attribute {}", node.describe(), key);
  }
  const Shape& q = shapes[0];
  const Shape& k = shapes[1];
  const Shape& v = shapes[2];
  if ((q.size() != 3 && q.size() != 4) || k.size() != q.size() || v.size() != q.size()) {
    fail("{}: Q, K and V must all have rank 3 or all rank 4, got {}, {} and {}", node.describe(),
         shape_to_string(q), shape_to_string(k), shape_to_string(v));
  }
  AttentionGeometry g;
  g.rank3 = q.size() == 3;
  const std::int64_t qh = node.attr_int("q_num_heads", 0);
  const std::int64_t kvh = node.attr_int("kv_num_heads", 0);
  if (g.rank3 && (qh <= 0 || kvh <= 0)) {
    fail("{}: 3D Q, K, V need the q_num_heads and kv_num_heads attributes", node.describe());
  }
  const auto qv = heads_view(node, q, g.rank3, qh, "Q");
  const auto kv = heads_view(node, k, g.rank3, kvh, "K");
  const auto vv = heads_view(node, v, g.rank3, kvh, "V");
  g.batch = qv[0];
  g.q_heads = qv[1];
  g.q_len = qv[2];
  g.head = qv[3];
  g.kv_heads = kv[1];
  g.kv_len = kv[2];
  g.v_head = vv[3];
  if (kv[0] != g.batch || vv[0] != g.batch || vv[1] != g.kv_heads || vv[2] != g.kv_len ||
      kv[3] != g.head) {
    fail("{}: Q {}, K {} and V {} do not agree on batch, heads, key length or head size",
         node.describe(), shape_to_string(q), shape_to_string(k), shape_to_string(v));
  }
  if (g.kv_heads <= 0 || g.q_heads % g.kv_heads != 0) {
    fail("{}: {} query heads are not a multiple of {} key/value heads", node.describe(), g.q_heads,
         g.kv_heads);
  }
  g.scale = node.has_attribute("scale") ? node.attr_float("scale", 1.0f)
                                        : 1.0 / std::sqrt(static_cast<double>(g.head));
  g.softcap = node.attr_float("softcap", 0.0f);
  g.causal = node.attr_int("is_causal", 0) != 0;
  if (node.has_input(3)) {
    const Shape& m = shapes[3];
    if (m.empty() || m.size() > 4) {
      fail("{}: attn_mask must have rank 1 to 4, got {}", node.describe(), shape_to_string(m));
    }
    const Shape full = {g.batch, g.q_heads, g.q_len, m.back()};
    for (std::size_t d = 0; d < m.size(); ++d) {
      const std::int64_t want = full[full.size() - m.size() + d];
      if (m[d] != 1 && m[d] != want) {
        fail("{}: attn_mask {} does not broadcast to {}", node.describe(), shape_to_string(m),
             shape_to_string(full));
      }
    }
    if (m.back() > g.kv_len) {
      fail("{}: attn_mask covers {} keys, more than the {} there are", node.describe(), m.back(),
           g.kv_len);
    }
    g.mask_shape = m;
    g.mask_is_bool = mask_is_bool;
  }
  return g;
}

RotaryGeometry rotary_geometry(const Node& node, const std::vector<Shape>& shapes) {
  const Shape& x = shapes[0];
  if (x.size() != 3 && x.size() != 4) {
    fail("{}: input must have rank 3 or 4, got {}", node.describe(), shape_to_string(x));
  }
  RotaryGeometry g;
  g.rank3 = x.size() == 3;
  const std::int64_t heads = node.attr_int("num_heads", 0);
  if (g.rank3 && heads <= 0) fail("{}: a 3D input needs the num_heads attribute", node.describe());
  const auto view = heads_view(node, x, g.rank3, heads, "input");
  g.batch = view[0];
  g.heads = view[1];
  g.seq = view[2];
  g.head = view[3];
  g.rotary_dim = node.attr_int("rotary_embedding_dim", 0);
  if (g.rotary_dim == 0) g.rotary_dim = g.head;
  if (g.rotary_dim < 0 || g.rotary_dim > g.head || g.rotary_dim % 2 != 0) {
    fail("{}: rotary_embedding_dim {} must be even and at most the head size {}", node.describe(),
         g.rotary_dim, g.head);
  }
  g.interleaved = node.attr_int("interleaved", 0) != 0;
  g.position_ids = node.has_input(3);
  const Shape& cos = shapes[1];
  const Shape& sin = shapes[2];
  const std::int64_t half = g.rotary_dim / 2;
  if (cos != sin) {
    fail("{}: cos_cache {} and sin_cache {} differ", node.describe(), shape_to_string(cos),
         shape_to_string(sin));
  }
  if (g.position_ids) {
    const Shape& ids = shapes[3];
    if (cos.size() != 2 || cos[1] != half) {
      fail("{}: with position_ids the caches must be [max_position, {}], got {}", node.describe(),
           half, shape_to_string(cos));
    }
    if (ids != Shape{g.batch, g.seq}) {
      fail("{}: position_ids must be [{}, {}], got {}", node.describe(), g.batch, g.seq,
           shape_to_string(ids));
    }
  } else if (cos != Shape{g.batch, g.seq, half}) {
    fail("{}: without position_ids the caches must be [{}, {}, {}], got {}", node.describe(),
         g.batch, g.seq, half, shape_to_string(cos));
  }
  return g;
}

}  // namespace orchid
