// Reference kernels of the normalization op family. Statistics use two passes (mean,
// then mean of squared deviations) in double, which avoids the cancellation of the
// E[x^2] - E[x]^2 form.
#include <cmath>
#include <cstdint>
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

void batch_norm_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Tensor& x = *inputs[0];
  const double eps = node.attr_float("epsilon", 1e-5f);
  const std::vector<double> scale = as_doubles(*inputs[1]);
  const std::vector<double> bias = as_doubles(*inputs[2]);
  const std::vector<double> mean = as_doubles(*inputs[3]);
  const std::vector<double> var = as_doubles(*inputs[4]);
  const std::int64_t n = x.shape()[0];
  const std::int64_t channels = x.shape()[1];
  const std::int64_t spatial = spatial_size(x.shape());
  dispatch<float, double>(x.dtype(), node, [&]<typename T>(T) {
    const T* px = x.data<T>();
    T* py = outputs[0].data<T>();
    for (std::int64_t b = 0; b < n; ++b) {
      for (std::int64_t c = 0; c < channels; ++c) {
        const auto ci = static_cast<std::size_t>(c);
        const double inv_std = 1.0 / std::sqrt(var[ci] + eps);
        const std::int64_t base = (b * channels + c) * spatial;
        for (std::int64_t i = 0; i < spatial; ++i) {
          const double v = static_cast<double>(px[base + i]);
          py[base + i] = static_cast<T>((v - mean[ci]) * inv_std * scale[ci] + bias[ci]);
        }
      }
    }
  });
}

void instance_norm_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Tensor& x = *inputs[0];
  const double eps = node.attr_float("epsilon", 1e-5f);
  const std::vector<double> scale = as_doubles(*inputs[1]);
  const std::vector<double> bias = as_doubles(*inputs[2]);
  const std::int64_t n = x.shape()[0];
  const std::int64_t channels = x.shape()[1];
  const std::int64_t spatial = spatial_size(x.shape());
  dispatch<float, double>(x.dtype(), node, [&]<typename T>(T) {
    const T* px = x.data<T>();
    T* py = outputs[0].data<T>();
    for (std::int64_t b = 0; b < n; ++b) {
      for (std::int64_t c = 0; c < channels; ++c) {
        const auto ci = static_cast<std::size_t>(c);
        const std::int64_t base = (b * channels + c) * spatial;
        double mean = 0;
        for (std::int64_t i = 0; i < spatial; ++i) mean += static_cast<double>(px[base + i]);
        mean /= static_cast<double>(spatial);
        double var = 0;
        for (std::int64_t i = 0; i < spatial; ++i) {
          const double d = static_cast<double>(px[base + i]) - mean;
          var += d * d;
        }
        var /= static_cast<double>(spatial);
        const double inv_std = 1.0 / std::sqrt(var + eps);
        for (std::int64_t i = 0; i < spatial; ++i) {
          const double v = static_cast<double>(px[base + i]);
          py[base + i] = static_cast<T>((v - mean) * inv_std * scale[ci] + bias[ci]);
        }
      }
    }
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

void layer_norm_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Tensor& x = *inputs[0];
  const auto rank = static_cast<std::int64_t>(x.rank());
  const auto axis =
      static_cast<std::size_t>(normalize_axis(node.attr_int("axis", -1), rank, node.describe()));
  const double eps = node.attr_float("epsilon", 1e-5f);
  const Shape normalized(x.shape().begin() + static_cast<std::ptrdiff_t>(axis), x.shape().end());
  const std::int64_t width = shape_numel(normalized);
  const std::int64_t rows = width == 0 ? 0 : x.numel() / width;
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
      double mean = 0;
      for (std::int64_t j = 0; j < width; ++j) mean += static_cast<double>(row[j]);
      mean /= static_cast<double>(width);
      double var = 0;
      for (std::int64_t j = 0; j < width; ++j) {
        const double d = static_cast<double>(row[j]) - mean;
        var += d * d;
      }
      var /= static_cast<double>(width);
      const double inv_std = 1.0 / std::sqrt(var + eps);
      for (std::int64_t j = 0; j < width; ++j) {
        const auto ji = static_cast<std::size_t>(j);
        const double v = (static_cast<double>(row[j]) - mean) * inv_std;
        py[r * width + j] = static_cast<T>(v * scale[ji] + bias[ji]);
      }
      row_mean[static_cast<std::size_t>(r)] = mean;
      row_inv_std[static_cast<std::size_t>(r)] = inv_std;
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
        double mean = 0;
        for (std::int64_t i = 0; i < width; ++i) mean += static_cast<double>(px[base + i]);
        mean /= static_cast<double>(width);
        double var = 0;
        for (std::int64_t i = 0; i < width; ++i) {
          const double d = static_cast<double>(px[base + i]) - mean;
          var += d * d;
        }
        var /= static_cast<double>(width);
        const double inv_std = 1.0 / std::sqrt(var + eps);
        for (std::int64_t i = 0; i < width; ++i) {
          const auto k = static_cast<std::size_t>(per_group ? g : g * per + i / spatial);
          const double v = (static_cast<double>(px[base + i]) - mean) * inv_std;
          py[base + i] = static_cast<T>(v * scale[k] + bias[k]);
        }
      }
    }
  });
}

void rms_norm_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Tensor& x = *inputs[0];
  const auto rank = static_cast<std::int64_t>(x.rank());
  const auto axis =
      static_cast<std::size_t>(normalize_axis(node.attr_int("axis", -1), rank, node.describe()));
  const double eps = node.attr_float("epsilon", 1e-5f);
  const Shape normalized(x.shape().begin() + static_cast<std::ptrdiff_t>(axis), x.shape().end());
  const std::int64_t width = shape_numel(normalized);
  const std::int64_t rows = width == 0 ? 0 : x.numel() / width;
  const std::vector<double> scale = expand_to(*inputs[1], normalized);
  dispatch<float, double>(x.dtype(), node, [&]<typename T>(T) {
    const T* px = x.data<T>();
    T* py = outputs[0].data<T>();
    for (std::int64_t r = 0; r < rows; ++r) {
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
