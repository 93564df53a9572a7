// Reference kernels of the attention op family (opset 23): Attention and RotaryEmbedding,
// computed in double per output element, directly from the ONNX definition.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "eval/reference/elementwise_util.hpp"
#include "eval/reference/reference_kernels.hpp"
#include "ir/ops/attention_params.hpp"

namespace orchid {

namespace {

using elementwise_util::dispatch;

using Inputs = std::span<const Tensor* const>;
using Outputs = std::span<Tensor>;

std::vector<Shape> shapes_of(Inputs inputs) {
  std::vector<Shape> shapes(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]) shapes[i] = inputs[i]->shape();
  }
  return shapes;
}

void store(Tensor& out, const std::vector<double>& values, const Node& node) {
  dispatch<float, double>(out.dtype(), node, [&]<typename T>(T) {
    T* p = out.data<T>();
    for (std::size_t i = 0; i < values.size(); ++i) p[i] = static_cast<T>(values[i]);
  });
}

// Element (b, h, s, d) of a [B, heads, S, head] tensor, or of [B, S, heads * head].
std::int64_t head_offset(bool rank3, std::int64_t heads, std::int64_t len, std::int64_t head,
                         std::int64_t b, std::int64_t h, std::int64_t s, std::int64_t d) {
  if (rank3) return ((b * len + s) * heads + h) * head + d;
  return ((b * heads + h) * len + s) * head + d;
}

// Y = softmax(scale Q K^T (softcapped) + bias) V per (b, h); bias from the mask (bool:
// 0 or -inf; float: added; keys past the mask's length -inf) and the causal frontier
// (key j <= query i). A row with every key masked gives 0, as ONNX's reference does.
void attention_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Tensor& q = *inputs[0];
  const Tensor& k = *inputs[1];
  const Tensor& v = *inputs[2];
  const Tensor* mask = inputs.size() > 3 ? inputs[3] : nullptr;
  const AttentionGeometry g =
      attention_geometry(node, shapes_of(inputs), mask && mask->dtype() == DType::Bool);
  const double neg_inf = -std::numeric_limits<double>::infinity();
  const std::int64_t group = g.q_heads / g.kv_heads;
  const Shape& ms = g.mask_shape;
  const std::int64_t mask_len = ms.empty() ? g.kv_len : ms.back();
  auto mask_index = [&](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) {
    const std::int64_t full[4] = {b, h, i, j};
    std::int64_t index = 0;
    for (std::size_t d = 0; d < ms.size(); ++d) {
      const std::int64_t at = full[4 - ms.size() + d];
      index = index * ms[d] + (ms[d] == 1 ? 0 : at);
    }
    return index;
  };
  std::vector<double> y(static_cast<std::size_t>(shape_numel(g.output_shape())), 0.0);
  std::vector<double> logits(static_cast<std::size_t>(g.kv_len));
  std::vector<double> bias(static_cast<std::size_t>(g.kv_len));
  for (std::int64_t b = 0; b < g.batch; ++b) {
    for (std::int64_t h = 0; h < g.q_heads; ++h) {
      const std::int64_t kh = h / group;
      for (std::int64_t i = 0; i < g.q_len; ++i) {
        double row_max = neg_inf, bias_max = neg_inf;
        for (std::int64_t j = 0; j < g.kv_len; ++j) {
          double dot = 0;
          for (std::int64_t d = 0; d < g.head; ++d) {
            dot += q.get_as_double(head_offset(g.rank3, g.q_heads, g.q_len, g.head, b, h, i, d)) *
                   k.get_as_double(head_offset(g.rank3, g.kv_heads, g.kv_len, g.head, b, kh, j, d));
          }
          double logit = dot * g.scale;
          if (g.softcap > 0) logit = g.softcap * std::tanh(logit / g.softcap);
          double add = 0;
          if (mask) {
            if (j >= mask_len) {
              add = neg_inf;
            } else if (g.mask_is_bool) {
              add = mask->get_as_double(mask_index(b, h, i, j)) != 0 ? 0.0 : neg_inf;
            } else {
              add = mask->get_as_double(mask_index(b, h, i, j));
            }
          }
          if (g.causal && j > i) add = neg_inf;
          const auto ju = static_cast<std::size_t>(j);
          bias[ju] = add;
          logits[ju] = logit + add;
          row_max = std::max(row_max, logits[ju]);
          bias_max = std::max(bias_max, add);
        }
        if (bias_max == neg_inf || g.kv_len == 0) continue;  // every key masked: Y row = 0
        double sum = 0;
        for (double& l : logits) {
          l = std::exp(l - row_max);
          sum += l;
        }
        for (std::int64_t d = 0; d < g.v_head; ++d) {
          double acc = 0;
          for (std::int64_t j = 0; j < g.kv_len; ++j) {
            acc +=
                logits[static_cast<std::size_t>(j)] *
                v.get_as_double(head_offset(g.rank3, g.kv_heads, g.kv_len, g.v_head, b, kh, j, d));
          }
          y[static_cast<std::size_t>(
              head_offset(g.rank3, g.q_heads, g.q_len, g.v_head, b, h, i, d))] = acc / sum;
        }
      }
    }
  }
  store(outputs[0], y, node);
}

// Rotates each head's first rotary_dim features by the cached angles of its position:
// (x1, x2) -> (cos x1 - sin x2, sin x1 + cos x2) for pairs (i, i + dim/2), or (2i, 2i+1)
// when interleaved.
void rotary_embedding_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Tensor& x = *inputs[0];
  const Tensor& cos = *inputs[1];
  const Tensor& sin = *inputs[2];
  const Tensor* ids = inputs.size() > 3 ? inputs[3] : nullptr;
  const RotaryGeometry g = rotary_geometry(node, shapes_of(inputs));
  const std::int64_t half = g.rotary_dim / 2;
  const std::int64_t max_pos = ids ? cos.shape()[0] : 0;
  std::vector<double> y(static_cast<std::size_t>(x.numel()));
  for (std::int64_t i = 0; i < x.numel(); ++i) y[static_cast<std::size_t>(i)] = x.get_as_double(i);
  for (std::int64_t b = 0; b < g.batch; ++b) {
    for (std::int64_t s = 0; s < g.seq; ++s) {
      std::int64_t row = b * g.seq + s;  // cache row without position ids
      if (ids) {
        row = ids->get_as_int64(b * g.seq + s);
        if (row < 0 || row >= max_pos) {
          fail("{}: position id {} is outside the caches' {} positions", node.describe(), row,
               max_pos);
        }
      }
      for (std::int64_t h = 0; h < g.heads; ++h) {
        for (std::int64_t p = 0; p < half; ++p) {
          const std::int64_t d1 = g.interleaved ? 2 * p : p;
          const std::int64_t d2 = g.interleaved ? 2 * p + 1 : p + half;
          const std::int64_t o1 = head_offset(g.rank3, g.heads, g.seq, g.head, b, h, s, d1);
          const std::int64_t o2 = head_offset(g.rank3, g.heads, g.seq, g.head, b, h, s, d2);
          const double c = cos.get_as_double(row * half + p);
          const double sn = sin.get_as_double(row * half + p);
          const double x1 = x.get_as_double(o1), x2 = x.get_as_double(o2);
          y[static_cast<std::size_t>(o1)] = c * x1 - sn * x2;
          y[static_cast<std::size_t>(o2)] = sn * x1 + c * x2;
        }
      }
    }
  }
  store(outputs[0], y, node);
}

}  // namespace

void register_attention_kernels(ReferenceKernelTable& table) {
  table["Attention"] = attention_kernel;
  table["RotaryEmbedding"] = rotary_embedding_kernel;
}

}  // namespace orchid
