// Attention and RotaryEmbedding (opset 23) as layout, linear, reduce and elementwise
// primitives (geometry shared with the shape functions: ir/ops/attention_params.hpp).
//   Attention: Q, K, V to [B, heads, S, head]; key/value heads repeated for grouped
//     queries; S = scale Q K^T (softcap c tanh(S / c)); + bias (mask as 0 / -inf or its
//     values, keys past the mask -inf, causal -inf above the diagonal); a softmax that
//     gives 0 for a row whose every key is masked (the row maximum is clamped to the
//     lowest finite value and the row sum to >= 1: a row with one unmasked key sums to
//     >= 1 already); Y = P V, back to the input's layout.
//   RotaryEmbedding: (x1, x2) -> (cos x1 - sin x2, sin x1 + cos x2) on the rotated part
//     of each head, cos/sin gathered by position id; the rest of the head passes through.
#include <limits>

#include "fission/rule.hpp"
#include "ir/ops/attention_params.hpp"

namespace orchid::fission_detail {

namespace {

std::vector<Shape> input_shapes(const RuleContext& ctx) {
  const Node& node = ctx.node();
  std::vector<Shape> shapes(node.inputs.size());
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.has_input(i)) shapes[i] = ctx.shape(node.inputs[i]);
  }
  return shapes;
}

// [B, S, heads * head] -> [B, heads, S, head]; 4D inputs are already in that layout.
std::string to_heads(RuleContext& ctx, const std::string& x, bool rank3, std::int64_t heads,
                     const std::string& what) {
  if (!rank3) return x;
  const Shape& s = ctx.shape(x);
  const std::string split = ctx.reshape(x, {s[0], s[1], heads, s[2] / heads}, what + "_split");
  return ctx.transpose(split, {0, 2, 1, 3}, what + "_heads");
}

// Each of the kv heads repeated `group` times in a row: [B, Hkv, S, D] -> [B, Hkv*g, S, D].
std::string repeat_heads(RuleContext& ctx, const std::string& x, std::int64_t group,
                         const std::string& what) {
  if (group == 1) return x;
  const Shape s = ctx.shape(x);
  const std::string r = ctx.reshape(x, {s[0], s[1], 1, s[2], s[3]}, what + "_r5");
  const std::string e =
      ctx.emit("Expand", {r, ctx.int64s(what + "_shape", {s[0], s[1], group, s[2], s[3]})}, {},
               what + "_expand");
  return ctx.reshape(e, {s[0], s[1] * group, s[2], s[3]}, what + "_repeat");
}

std::string constant_like(RuleContext& ctx, const std::string& what, const Shape& shape,
                          const std::vector<float>& values, DType dt) {
  return ctx.constant(what, Tensor::from_vector<float>(shape, values).cast(dt));
}

void attention(RuleContext& ctx) {
  const Node& node = ctx.node();
  const std::string mask = ctx.input(3);
  const bool mask_is_bool = !mask.empty() && ctx.dtype(mask) == DType::Bool;
  const AttentionGeometry g = attention_geometry(node, input_shapes(ctx), mask_is_bool);
  const DType dt = ctx.dtype(ctx.input(0));
  const float neg_inf = -std::numeric_limits<float>::infinity();

  const std::string q = to_heads(ctx, ctx.input(0), g.rank3, g.q_heads, "q");
  const std::string k = repeat_heads(ctx, to_heads(ctx, ctx.input(1), g.rank3, g.kv_heads, "k"),
                                     g.q_heads / g.kv_heads, "k");
  const std::string v = repeat_heads(ctx, to_heads(ctx, ctx.input(2), g.rank3, g.kv_heads, "v"),
                                     g.q_heads / g.kv_heads, "v");
  const std::string kt = ctx.transpose(k, {0, 1, 3, 2}, "k_t");
  const std::string qk = ctx.emit("MatMul", {q, kt}, {}, "qk");
  std::string s = ctx.emit("Mul", {qk, ctx.scalar("scale", g.scale, dt)}, {}, "scaled");
  if (g.softcap > 0) {
    const std::string cap = ctx.scalar("softcap", g.softcap, dt);
    const std::string t =
        ctx.emit("Tanh", {ctx.emit("Div", {s, cap}, {}, "cap_div")}, {}, "cap_tanh");
    s = ctx.emit("Mul", {t, cap}, {}, "capped");
  }

  const bool masked = !mask.empty() || g.causal;
  if (!mask.empty()) {
    std::string bias = mask;
    if (mask_is_bool) {
      bias =
          ctx.emit("Where", {mask, ctx.scalar("zero", 0.0, dt), ctx.scalar("neg_inf", neg_inf, dt)},
                   {}, "mask_bias");
    }
    const std::int64_t mask_len = g.mask_shape.back();
    if (mask_len < g.kv_len) {  // keys past the mask are masked
      Shape pad = g.mask_shape;
      pad.back() = g.kv_len - mask_len;
      const std::string fill = constant_like(
          ctx, "mask_pad", pad,
          std::vector<float>(static_cast<std::size_t>(shape_numel(pad)), neg_inf), dt);
      bias = ctx.emit("Concat", {bias, fill}, {{"axis", static_cast<std::int64_t>(pad.size()) - 1}},
                      "mask_padded");
    }
    s = ctx.emit("Add", {s, bias}, {}, "masked");
  }
  if (g.causal) {
    std::vector<float> frontier(static_cast<std::size_t>(g.q_len * g.kv_len), 0.0f);
    for (std::int64_t i = 0; i < g.q_len; ++i) {
      for (std::int64_t j = i + 1; j < g.kv_len; ++j) {
        frontier[static_cast<std::size_t>(i * g.kv_len + j)] = neg_inf;
      }
    }
    const std::string c = constant_like(ctx, "causal", {g.q_len, g.kv_len}, frontier, dt);
    s = ctx.emit("Add", {s, c}, {}, "causal");
  }

  std::string m = ctx.reduce("ReduceMax", s, {3}, true, "max");
  if (masked) {
    m = ctx.emit("Max", {m, ctx.scalar("lowest", std::numeric_limits<float>::lowest(), dt)}, {},
                 "max_finite");
  }
  const std::string e = ctx.emit("Exp", {ctx.emit("Sub", {s, m}, {}, "sub")}, {}, "exp");
  std::string sum = ctx.reduce("ReduceSum", e, {3}, true, "sum");
  if (masked) sum = ctx.emit("Max", {sum, ctx.scalar("one", 1.0, dt)}, {}, "sum_nonzero");
  const std::string p = ctx.emit("Div", {e, sum}, {}, "softmax");
  if (!g.rank3) {
    ctx.emit("MatMul", {p, v}, {}, "pv", ctx.output(0));
    return;
  }
  const std::string y = ctx.emit("MatMul", {p, v}, {}, "pv");
  const std::string yt = ctx.transpose(y, {0, 2, 1, 3}, "y_t");
  ctx.reshape(yt, g.output_shape(), "y", ctx.output(0));
}

void rotary_embedding(RuleContext& ctx) {
  const Node& node = ctx.node();
  const RotaryGeometry g = rotary_geometry(node, input_shapes(ctx));
  const std::int64_t half = g.rotary_dim / 2;
  const std::string x = ctx.input(0);
  // [B, S, N, H] either way.
  const std::string xs = g.rank3 ? ctx.reshape(x, {g.batch, g.seq, g.heads, g.head}, "x_split")
                                 : ctx.transpose(x, {0, 2, 1, 3}, "x_t");
  auto angles = [&](std::size_t input, const std::string& what) {
    std::string c = ctx.input(input);
    if (g.position_ids) {
      c = ctx.emit("Gather", {c, ctx.input(3)}, {{"axis", std::int64_t{0}}}, what + "_gather");
    }
    return g.interleaved ? ctx.reshape(c, {g.batch, g.seq, 1, half, 1}, what + "_b5")
                         : ctx.reshape(c, {g.batch, g.seq, 1, half}, what + "_b4");
  };
  const std::string cos = angles(1, "cos");
  const std::string sin = angles(2, "sin");
  const std::string rot =
      g.rotary_dim < g.head ? ctx.slice(xs, {0}, {g.rotary_dim}, {3}, "x_rot") : xs;
  std::string x1, x2;
  std::int64_t pair_axis = 3;
  if (g.interleaved) {
    const std::string r5 = ctx.reshape(rot, {g.batch, g.seq, g.heads, half, 2}, "x_pairs");
    x1 = ctx.slice(r5, {0}, {1}, {4}, "x1");
    x2 = ctx.slice(r5, {1}, {2}, {4}, "x2");
    pair_axis = 4;
  } else {
    x1 = ctx.slice(rot, {0}, {half}, {3}, "x1");
    x2 = ctx.slice(rot, {half}, {g.rotary_dim}, {3}, "x2");
  }
  const std::string real = ctx.emit(
      "Sub", {ctx.emit("Mul", {cos, x1}, {}, "cos_x1"), ctx.emit("Mul", {sin, x2}, {}, "sin_x2")},
      {}, "real");
  const std::string imag = ctx.emit(
      "Add", {ctx.emit("Mul", {sin, x1}, {}, "sin_x1"), ctx.emit("Mul", {cos, x2}, {}, "cos_x2")},
      {}, "imag");
  std::string rotated = ctx.emit("Concat", {real, imag}, {{"axis", pair_axis}}, "rotated");
  if (g.interleaved) {
    rotated = ctx.reshape(rotated, {g.batch, g.seq, g.heads, g.rotary_dim}, "rotated_b4");
  }
  std::string out = rotated;
  if (g.rotary_dim < g.head) {
    const std::string rest = ctx.slice(xs, {g.rotary_dim}, {g.head}, {3}, "x_pass");
    out = ctx.emit("Concat", {rotated, rest}, {{"axis", std::int64_t{3}}}, "joined");
  }
  if (g.rank3) {
    ctx.reshape(out, ctx.shape(x), "y", ctx.output(0));
  } else {
    ctx.transpose(out, {0, 2, 1, 3}, "y", ctx.output(0));
  }
}

}  // namespace

void register_attention_rules(RuleTable& table) {
  table["Attention"] = attention;
  table["RotaryEmbedding"] = rotary_embedding;
}

}  // namespace orchid::fission_detail
