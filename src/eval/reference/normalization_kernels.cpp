// Reference kernels of the normalization op family. Statistics use two passes (mean,
// then mean of squared deviations) in double, which avoids the cancellation of the
// E[x^2] - E[x]^2 form.
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "eval/reference/elementwise_util.hpp"
#include "eval/reference/reference_kernels.hpp"

namespace orchid {

namespace {

using elementwise_util::dispatch;
using elementwise_util::for_each_broadcast;

using Inputs = std::span<const Tensor* const>;
using Outputs = std::span<Tensor>;

// Small parameter tensors (per channel / per feature) read once as double.
std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> out(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i)
    out[static_cast<std::size_t>(i)] = t.get_as_double(i);
  return out;
}

// Elements per (n, c) slice of an N x C x ... tensor.
std::int64_t spatial_size(const Shape& shape) {
  std::int64_t s = 1;
  for (std::size_t d = 2; d < shape.size(); ++d) s *= shape[d];
  return s;
}

// Mean and 1 / sqrt(variance + eps) of one contiguous run of values.
struct Moments {
  double mean;
  double inv_std;
};

// The two-pass statistics shared by InstanceNorm, LayerNorm and GroupNorm, so they sum
// in one place and in one order (left to right, in double): the results stay bit-exact.
template <typename T>
Moments moments(const T* p, std::int64_t count, double eps) {
  double mean = 0;
  for (std::int64_t i = 0; i < count; ++i) mean += static_cast<double>(p[i]);
  mean /= static_cast<double>(count);
  double var = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    const double d = static_cast<double>(p[i]) - mean;
    var += d * d;
  }
  var /= static_cast<double>(count);
  return {mean, 1.0 / std::sqrt(var + eps)};
}

// y = (x - mean) * inv_std * scale + bias over one run with a single scale and bias;
// the one expression (and evaluation order) of BatchNorm, InstanceNorm and GroupNorm.
template <typename T>
void normalize_run(const T* px, T* py, std::int64_t count, Moments m, double scale, double bias) {
  for (std::int64_t i = 0; i < count; ++i) {
    const double v = (static_cast<double>(px[i]) - m.mean) * m.inv_std;
    py[i] = static_cast<T>(v * scale + bias);
  }
}

// Calls f(px, py, c) for each (n, c) slice of an N x C x ... input and its output,
// `spatial_size` elements each: the loop nest of BatchNorm and InstanceNorm.
template <typename F>
void for_each_channel_slice(const Node& node, const Tensor& x, Tensor& y, F&& f) {
  const std::int64_t n = x.shape()[0];
  const std::int64_t channels = x.shape()[1];
  const std::int64_t spatial = spatial_size(x.shape());
  dispatch<float, double>(x.dtype(), node, [&]<typename T>(T) {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (std::int64_t b = 0; b < n; ++b) {
      for (std::int64_t c = 0; c < channels; ++c) {
        const std::int64_t base = (b * channels + c) * spatial;
        f(px + base, py + base, static_cast<std::size_t>(c));
      }
    }
  });
}

void batch_norm_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Tensor& x = *inputs[0];
  const double eps = node.attr_float("epsilon", 1e-5f);
  const std::vector<double> scale = as_doubles(*inputs[1]);
  const std::vector<double> bias = as_doubles(*inputs[2]);
  const std::vector<double> mean = as_doubles(*inputs[3]);
  const std::vector<double> var = as_doubles(*inputs[4]);
  const std::int64_t spatial = spatial_size(x.shape());
  for_each_channel_slice(node, x, outputs[0], [&](const auto* px, auto* py, std::size_t c) {
    const Moments m{mean[c], 1.0 / std::sqrt(var[c] + eps)};
    normalize_run(px, py, spatial, m, scale[c], bias[c]);
  });
}

void instance_norm_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Tensor& x = *inputs[0];
  const double eps = node.attr_float("epsilon", 1e-5f);
  const std::vector<double> scale = as_doubles(*inputs[1]);
  const std::vector<double> bias = as_doubles(*inputs[2]);
  const std::int64_t spatial = spatial_size(x.shape());
  for_each_channel_slice(node, x, outputs[0], [&](const auto* px, auto* py, std::size_t c) {
    normalize_run(px, py, spatial, moments(px, spatial, eps), scale[c], bias[c]);
  });
}

// Expands a parameter that broadcasts to `normalized` into one value per element of it.
std::vector<double> expand_to(const Tensor& param, const Shape& normalized) {
  const std::vector<double> values = as_doubles(param);
  std::vector<double> out(static_cast<std::size_t>(shape_numel(normalized)));
  for_each_broadcast<1>(normalized, {&param.shape()}, [&](std::int64_t i, const auto& off) {
    out[static_cast<std::size_t>(i)] = values[static_cast<std::size_t>(off[0])];
  });
  return out;
}

// LayerNorm and RMSNorm see x as `rows` rows of `width` elements, the normalized
// dims [axis, rank) (axis from the node's attribute, default -1); shared so both agree.
struct RowView {
  Shape normalized;
  std::int64_t rows;
  std::int64_t width;
};

RowView row_view(const Node& node, const Tensor& x) {
  const auto rank = static_cast<std::int64_t>(x.rank());
  const auto axis =
      static_cast<std::size_t>(normalize_axis(node.attr_int("axis", -1), rank, node.describe()));
  Shape normalized(x.shape().begin() + static_cast<std::ptrdiff_t>(axis), x.shape().end());
  const std::int64_t width = shape_numel(normalized);
  const std::int64_t rows = width == 0 ? 0 : x.numel() / width;
  return {std::move(normalized), rows, width};
}

void layer_norm_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Tensor& x = *inputs[0];
  const RowView view = row_view(node, x);  // not a structured binding: lambdas capture these
  const Shape& normalized = view.normalized;
  const std::int64_t rows = view.rows;
  const std::int64_t width = view.width;
  const double eps = node.attr_float("epsilon", 1e-5f);
  const std::vector<double> scale = expand_to(*inputs[1], normalized);
  const bool has_bias = inputs.size() > 2 && inputs[2];
  const std::vector<double> bias = has_bias
                                       ? expand_to(*inputs[2], normalized)
                                       : std::vector<double>(static_cast<std::size_t>(width), 0.0);
  // Statistics per row, stored into the optional Mean / InvStdDev outputs afterwards.
  std::vector<double> row_mean(static_cast<std::size_t>(rows));
  std::vector<double> row_inv_std(static_cast<std::size_t>(rows));
  dispatch<float, double>(x.dtype(), node, [&]<typename T>(T) {
    const T* px = x.data<T>();
    T* py = outputs[0].data<T>();
    for (std::int64_t r = 0; r < rows; ++r) {
      const T* row = px + r * width;
      const Moments m = moments(row, width, eps);
      for (std::int64_t j = 0; j < width; ++j) {
        const auto ji = static_cast<std::size_t>(j);
        const double v = (static_cast<double>(row[j]) - m.mean) * m.inv_std;
        py[r * width + j] = static_cast<T>(v * scale[ji] + bias[ji]);
      }
      row_mean[static_cast<std::size_t>(r)] = m.mean;
      row_inv_std[static_cast<std::size_t>(r)] = m.inv_std;
    }
  });
  const std::vector<double>* stats[] = {&row_mean, &row_inv_std};
  for (std::size_t k = 1; k <= 2; ++k) {
    if (k >= node.outputs.size() || node.outputs[k].empty()) continue;
    Tensor& out = outputs[k];
    dispatch<float, double>(out.dtype(), node, [&]<typename S>(S) {
      S* p = out.data<S>();
      for (std::int64_t r = 0; r < rows; ++r) {
        p[r] = static_cast<S>((*stats[k - 1])[static_cast<std::size_t>(r)]);
      }
    });
  }
}

// Statistics per (n, group) over the group's channels and all spatial positions; scale
// and bias per channel, or per group (opset 18 form, shape [num_groups]).
void group_norm_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Tensor& x = *inputs[0];
  const double eps = node.attr_float("epsilon", 1e-5f);
  const std::int64_t groups = node.required_int("num_groups");
  const std::vector<double> scale = as_doubles(*inputs[1]);
  const std::vector<double> bias = as_doubles(*inputs[2]);
  const bool per_group = static_cast<std::int64_t>(scale.size()) != x.shape()[1];
  const std::int64_t n = x.shape()[0];
  const std::int64_t channels = x.shape()[1];
  const std::int64_t per = channels / groups;
  const std::int64_t spatial = spatial_size(x.shape());
  const std::int64_t width = per * spatial;
  dispatch<float, double>(x.dtype(), node, [&]<typename T>(T) {
    const T* px = x.data<T>();
    T* py = outputs[0].data<T>();
    for (std::int64_t b = 0; b < n; ++b) {
      for (std::int64_t g = 0; g < groups; ++g) {
        const std::int64_t base = (b * channels + g * per) * spatial;
        const Moments m = moments(px + base, width, eps);
        // One run per channel of the group: scale and bias are constant along it.
        for (std::int64_t c = 0; c < per; ++c) {
          const auto k = static_cast<std::size_t>(per_group ? g : g * per + c);
          const std::int64_t off = base + c * spatial;
          normalize_run(px + off, py + off, spatial, m, scale[k], bias[k]);
        }
      }
    }
  });
}

void rms_norm_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Tensor& x = *inputs[0];
  const RowView view = row_view(node, x);
  const double eps = node.attr_float("epsilon", 1e-5f);
  const std::vector<double> scale = expand_to(*inputs[1], view.normalized);
  const std::int64_t width = view.width;
  dispatch<float, double>(x.dtype(), node, [&]<typename T>(T) {
    const T* px = x.data<T>();
    T* py = outputs[0].data<T>();
    for (std::int64_t r = 0; r < view.rows; ++r) {
      const T* row = px + r * width;
      double mean_square = 0;
      for (std::int64_t j = 0; j < width; ++j) {
        const double v = static_cast<double>(row[j]);
        mean_square += v * v;
      }
      mean_square /= static_cast<double>(width);
      const double inv_rms = 1.0 / std::sqrt(mean_square + eps);
      for (std::int64_t j = 0; j < width; ++j) {
        py[r * width + j] = static_cast<T>(static_cast<double>(row[j]) * inv_rms *
                                           scale[static_cast<std::size_t>(j)]);
      }
    }
  });
}

void lp_norm_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Tensor& x = *inputs[0];
  const auto rank = static_cast<std::int64_t>(x.rank());
  const std::int64_t axis = normalize_axis(node.attr_int("axis", -1), rank, node.describe());
  const bool l1 = node.attr_int("p", 2) == 1;
  std::int64_t outer = 1, n = x.shape()[static_cast<std::size_t>(axis)], inner = 1;
  for (std::int64_t d = 0; d < rank; ++d) {
    if (d < axis) outer *= x.shape()[static_cast<std::size_t>(d)];
    if (d > axis) inner *= x.shape()[static_cast<std::size_t>(d)];
  }
  dispatch<float, double>(x.dtype(), node, [&]<typename T>(T) {
    const T* px = x.data<T>();
    T* py = outputs[0].data<T>();
    for (std::int64_t o = 0; o < outer; ++o) {
      for (std::int64_t j = 0; j < inner; ++j) {
        const std::int64_t base = o * n * inner + j;
        double norm = 0;
        for (std::int64_t k = 0; k < n; ++k) {
          const double v = static_cast<double>(px[base + k * inner]);
          norm += l1 ? std::fabs(v) : v * v;
        }
        if (!l1) norm = std::sqrt(norm);
        for (std::int64_t k = 0; k < n; ++k) {
          // A zero vector stays zero (ONNX's reference), not 0/0.
          const double v = norm == 0 ? 0.0 : static_cast<double>(px[base + k * inner]) / norm;
          py[base + k * inner] = static_cast<T>(v);
        }
      }
    }
  });
}

}  // namespace

void register_normalization_kernels(ReferenceKernelTable& table) {
  table["BatchNormalization"] = batch_norm_kernel;
  table["InstanceNormalization"] = instance_norm_kernel;
  table["LayerNormalization"] = layer_norm_kernel;
  table["LpNormalization"] = lp_norm_kernel;
  table["GroupNormalization"] = group_norm_kernel;
  table["RMSNormalization"] = rms_norm_kernel;
}

}  // namespace orchid
