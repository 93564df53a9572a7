// Reference kernels of the quantization op family. Quantize/Dequantize follow the ONNX
// formulas in float; the integer linear ops (QLinearConv, QLinearMatMul, ConvInteger,
// MatMulInteger) accumulate exactly in int32 like integer hardware does, and QLinear*
// requantize with one float multiplier per output channel, as ONNX Runtime does.
#include <algorithm>
#include <cmath>
#include <limits>

#include "eval/reference/linear_pooling_common.hpp"
#include "eval/reference/reference_kernels.hpp"
#include "ir/ops/quantization_params.hpp"
#include "ir/ops/window_geometry.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

using reference::Geometry3;
using reference::parallel_for;
using reference::to_3d;
using reference::valid_range;

// Element i of an int8/uint8/int32 tensor, as int32.
std::int32_t int_at(const Tensor& t, std::int64_t i) {
  switch (t.dtype()) {
    case DType::I8:
      return t.data<std::int8_t>()[i];
    case DType::U8:
      return t.data<std::uint8_t>()[i];
    case DType::I32:
      return t.data<std::int32_t>()[i];
    default:
      internal_error("quantized tensor of dtype {}", dtype_name(t.dtype()));
  }
}

// Writes a rounded value saturated to the tensor's int8/uint8 range.
void store_saturated(Tensor& t, std::int64_t i, float rounded) {
  if (t.dtype() == DType::I8) {
    t.data<std::int8_t>()[i] = static_cast<std::int8_t>(std::clamp(rounded, -128.0f, 127.0f));
  } else {
    t.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(std::clamp(rounded, 0.0f, 255.0f));
  }
}

std::int32_t zero_point_at(const Tensor* zp, std::int64_t i) {
  return zp ? int_at(*zp, zp->numel() == 1 ? 0 : i) : 0;
}

const Tensor* optional(std::span<const Tensor* const> inputs, std::size_t i) {
  return i < inputs.size() ? inputs[i] : nullptr;
}

void quantize_linear(const Node& node, std::span<const Tensor* const> inputs,
                     std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const Tensor& scale = *inputs[1];
  const Tensor* zp = optional(inputs, 2);
  const QuantLayout q = quant_layout(node, x.shape(), scale.shape());
  const float* xd = x.data<float>();
  const float* sd = scale.data<float>();
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const std::int64_t s = q.scale_index(i);
    store_saturated(outputs[0], i,
                    quantize_round(xd[i] / sd[s]) + static_cast<float>(zero_point_at(zp, s)));
  }
}

void dequantize_linear(const Node& node, std::span<const Tensor* const> inputs,
                       std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const Tensor& scale = *inputs[1];
  const Tensor* zp = optional(inputs, 2);
  const QuantLayout q = quant_layout(node, x.shape(), scale.shape());
  const float* sd = scale.data<float>();
  float* y = outputs[0].data<float>();
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const std::int64_t s = q.scale_index(i);
    y[i] = static_cast<float>(int_at(x, i) - zero_point_at(zp, s)) * sd[s];
  }
}

void dynamic_quantize_linear(const Node&, std::span<const Tensor* const> inputs,
                             std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const float* xd = x.data<float>();
  // The range always includes 0 so that 0 is exactly representable.
  float lo = 0.0f, hi = 0.0f;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    lo = std::min(lo, xd[i]);
    hi = std::max(hi, xd[i]);
  }
  const float scale = (hi - lo) / 255.0f;
  const float zp = scale == 0.0f ? 0.0f : std::clamp(quantize_round(-lo / scale), 0.0f, 255.0f);
  auto* y = outputs[0].data<std::uint8_t>();
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const float v = scale == 0.0f ? zp : quantize_round(xd[i] / scale) + zp;
    y[i] = static_cast<std::uint8_t>(std::clamp(v, 0.0f, 255.0f));
  }
  outputs[1].data<float>()[0] = scale;
  outputs[2].data<std::uint8_t>()[0] = static_cast<std::uint8_t>(zp);
}

// Data minus its zero point, as int32. `group` maps an element index to the index of
// its zero point (per tensor: always 0).
template <typename Group>
std::vector<std::int32_t> centered(const Tensor& t, const Tensor* zp, Group group) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    v[static_cast<std::size_t>(i)] = int_at(t, i) - zero_point_at(zp, group(i));
  }
  return v;
}

std::vector<std::int64_t> spatial_of(const Shape& shape) {
  return {shape.begin() + 2, shape.end()};
}

// Exact int32 convolution of centered operands (Conv's attributes and layout).
std::vector<std::int32_t> integer_conv(const Node& node, const Shape& xs,
                                       const std::vector<std::int32_t>& x, const Shape& ws,
                                       const std::vector<std::int32_t>& w, const Shape& ys) {
  const Geometry3 g = to_3d(window_geometry(node, spatial_of(xs), spatial_of(ws), false));
  const std::int64_t channels = xs[1];
  const std::int64_t out_channels = ws[0];
  const std::int64_t group = node.attr_int("group", 1);
  std::vector<std::int32_t> y(static_cast<std::size_t>(shape_numel(ys)));
  reference::direct_conv(g, xs[0], channels, out_channels, group, x.data(), w.data(),
                         static_cast<const std::int32_t*>(nullptr), y.data());
  return y;
}

// Exact int32 (batched, broadcasting) matrix product of centered operands; `ys` is
// MatMul's output shape.
std::vector<std::int32_t> integer_matmul(Shape as, const std::vector<std::int32_t>& a, Shape bs,
                                         const std::vector<std::int32_t>& b, const Shape& ys) {
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const std::int64_t m = as[as.size() - 2];
  const std::int64_t k = as.back();
  const std::int64_t n = bs.back();
  const std::int64_t a_mats = shape_numel(as) / (m * k);
  const std::int64_t b_mats = shape_numel(bs) / (k * n);
  const std::int64_t batches = shape_numel(ys) / (m * n);
  // Output batch t reads A's and B's batch by broadcasting over the trailing batch dims.
  const Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  const std::size_t rank = std::max(a_batch.size(), b_batch.size());
  auto batch_index = [&](std::int64_t t, const Shape& own) {
    std::int64_t index = 0, stride = 1, rest = t;
    for (std::size_t r = rank; r-- > 0;) {
      const std::int64_t out_dim =
          std::max(r + a_batch.size() >= rank ? a_batch[r + a_batch.size() - rank] : 1,
                   r + b_batch.size() >= rank ? b_batch[r + b_batch.size() - rank] : 1);
      const std::int64_t idx = rest % out_dim;
      rest /= out_dim;
      if (r + own.size() >= rank) {
        const std::int64_t dim = own[r + own.size() - rank];
        if (dim != 1) index += idx * stride;
        stride *= dim;
      }
    }
    return index;
  };
  std::vector<std::int32_t> y(static_cast<std::size_t>(batches * m * n), 0);
  for (std::int64_t t = 0; t < batches; ++t) {
    const std::int64_t ai = a_mats == 1 ? 0 : batch_index(t, a_batch);
    const std::int64_t bi = b_mats == 1 ? 0 : batch_index(t, b_batch);
    parallel_for(m, k * n, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) {
        const std::int32_t* ar = a.data() + (ai * m + i) * k;
        std::int32_t* yr = y.data() + (t * m + i) * n;
        for (std::int64_t p = 0; p < k; ++p) {
          const std::int32_t av = ar[p];
          const std::int32_t* br = b.data() + (bi * k + p) * n;
          for (std::int64_t j = 0; j < n; ++j) yr[j] += av * br[j];
        }
      }
    });
  }
  return y;
}

void conv_integer(const Node& node, std::span<const Tensor* const> inputs,
                  std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const Tensor& w = *inputs[1];
  const std::int64_t per_m = w.numel() / w.shape()[0];
  const auto xc = centered(x, optional(inputs, 2), [](std::int64_t) { return 0; });
  const auto wc = centered(w, optional(inputs, 3), [&](std::int64_t i) { return i / per_m; });
  const auto y = integer_conv(node, x.shape(), xc, w.shape(), wc, outputs[0].shape());
  std::copy(y.begin(), y.end(), outputs[0].data<std::int32_t>());
}

void matmul_integer(const Node&, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  const Tensor& a = *inputs[0];
  const Tensor& b = *inputs[1];
  const std::int64_t k = a.shape().back();
  const std::int64_t rows = a.rank() >= 2 ? a.shape()[a.rank() - 2] : 1;
  const std::int64_t cols = b.rank() >= 2 ? b.shape().back() : 1;
  const auto ac = centered(a, optional(inputs, 2), [&](std::int64_t i) { return (i / k) % rows; });
  const auto bc = centered(b, optional(inputs, 3), [&](std::int64_t i) { return i % cols; });
  const auto y = integer_matmul(a.shape(), ac, b.shape(), bc, outputs[0].shape());
  std::copy(y.begin(), y.end(), outputs[0].data<std::int32_t>());
}

float scale_at(const Tensor& s, std::int64_t i) {
  return s.data<float>()[s.numel() == 1 ? 0 : i];
}

void qlinear_conv(const Node& node, std::span<const Tensor* const> inputs,
                  std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const Tensor& w = *inputs[3];
  const std::int64_t m_count = w.shape()[0];
  const std::int64_t per_m = w.numel() / m_count;
  const auto xc = centered(x, inputs[2], [](std::int64_t) { return 0; });
  const auto wc = centered(w, inputs[5], [&](std::int64_t i) { return i / per_m; });
  Tensor& y = outputs[0];
  const auto acc = integer_conv(node, x.shape(), xc, w.shape(), wc, y.shape());
  const Tensor* bias = optional(inputs, 8);
  const std::int64_t out_vol = y.numel() / (y.shape()[0] * m_count);
  const float y_scale = scale_at(*inputs[6], 0);
  const auto y_zp = static_cast<float>(zero_point_at(inputs[7], 0));
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    const std::int64_t m = (i / out_vol) % m_count;
    const float multiplier = scale_at(*inputs[1], 0) * scale_at(*inputs[4], m) / y_scale;
    const std::int32_t total = acc[static_cast<std::size_t>(i)] + (bias ? int_at(*bias, m) : 0);
    store_saturated(y, i, quantize_round(static_cast<float>(total) * multiplier) + y_zp);
  }
}

void qlinear_matmul(const Node&, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  const Tensor& a = *inputs[0];
  const Tensor& b = *inputs[3];
  const std::int64_t k = a.shape().back();
  const std::int64_t rows = a.rank() >= 2 ? a.shape()[a.rank() - 2] : 1;
  const std::int64_t cols = b.rank() >= 2 ? b.shape().back() : 1;
  const auto ac = centered(a, inputs[2], [&](std::int64_t i) { return (i / k) % rows; });
  const auto bc = centered(b, inputs[5], [&](std::int64_t i) { return i % cols; });
  Tensor& y = outputs[0];
  const auto acc = integer_matmul(a.shape(), ac, b.shape(), bc, y.shape());
  const float y_scale = scale_at(*inputs[6], 0);
  const auto y_zp = static_cast<float>(zero_point_at(inputs[7], 0));
  const std::int64_t n = b.rank() >= 2 ? cols : 1;
  const std::int64_t m = a.rank() >= 2 ? rows : 1;
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    const float multiplier =
        scale_at(*inputs[1], (i / n) % m) * scale_at(*inputs[4], i % n) / y_scale;
    store_saturated(
        y, i,
        quantize_round(static_cast<float>(acc[static_cast<std::size_t>(i)]) * multiplier) + y_zp);
  }
}

}  // namespace

void register_quantization_kernels(ReferenceKernelTable& table) {
  table["ConvInteger"] = conv_integer;
  table["DequantizeLinear"] = dequantize_linear;
  table["DynamicQuantizeLinear"] = dynamic_quantize_linear;
  table["MatMulInteger"] = matmul_integer;
  table["QLinearConv"] = qlinear_conv;
  table["QLinearMatMul"] = qlinear_matmul;
  table["QuantizeLinear"] = quantize_linear;
}

}  // namespace orchid
