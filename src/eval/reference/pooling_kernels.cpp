// Reference kernels of the pooling op family. Windows are walked directly; averages
// are summed in double and divided once, so they are as exact as float output allows.
// RoiAlign interpolates in double too.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "eval/reference/linear_pooling_common.hpp"
#include "eval/reference/reference_kernels.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

using reference::Geometry3;
using reference::parallel_for;

// Per axis and output position: the kernel taps [lo, hi) that land inside the input,
// and how many taps land inside the padded input (for count_include_pad).
struct AxisWindow {
  std::int64_t start = 0;  // input coordinate of tap 0
  std::int64_t lo = 0, hi = 0;
  std::int64_t padded_count = 0;
};

std::vector<AxisWindow> axis_windows(const Geometry3& g, std::size_t axis) {
  std::vector<AxisWindow> table(static_cast<std::size_t>(g.out[axis]));
  for (std::int64_t o = 0; o < g.out[axis]; ++o) {
    AxisWindow& w = table[static_cast<std::size_t>(o)];
    w.start = o * g.s[axis] - g.pad[axis];
    reference::valid_range(w.start, g.d[axis], g.k[axis], g.in[axis], w.lo, w.hi);
    std::int64_t plo, phi;
    reference::valid_range(w.start + g.pad[axis], g.d[axis], g.k[axis],
                           g.in[axis] + g.pad[axis] + g.pad_end[axis], plo, phi);
    w.padded_count = phi - plo;
  }
  return table;
}

Geometry3 pool_geometry(const Node& node, const Tensor& x) {
  const Shape& s = x.shape();
  return reference::to_3d(window_geometry(node, {s.begin() + 2, s.end()},
                                          node.required_ints("kernel_shape"),
                                          node.attr_int("ceil_mode", 0) != 0));
}

// Visits every output element of every (n, c) plane with its three axis windows.
template <typename Reduce>
void for_each_window(const Geometry3& g, std::int64_t planes, const float* x, float* y,
                     Reduce&& reduce) {
  const std::vector<AxisWindow> wd = axis_windows(g, 0), wh = axis_windows(g, 1),
                                wwi = axis_windows(g, 2);
  const std::int64_t in_vol = g.in_volume();
  const std::int64_t out_vol = g.out_volume();
  parallel_for(planes, out_vol * g.k_volume(), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t p = begin; p < end; ++p) {
      const float* xp = x + p * in_vol;
      float* yp = y + p * out_vol;
      for (const AxisWindow& a : wd) {
        for (const AxisWindow& b : wh) {
          for (const AxisWindow& c : wwi) *yp++ = reduce(xp, a, b, c);
        }
      }
    }
  });
}

void max_pool(const Node& node, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const Geometry3 g = pool_geometry(node, x);
  const std::int64_t planes = x.shape()[0] * x.shape()[1];
  for_each_window(
      g, planes, x.data<float>(), outputs[0].data<float>(),
      [&](const float* xp, const AxisWindow& a, const AxisWindow& b, const AxisWindow& c) {
        float best = -std::numeric_limits<float>::infinity();
        for (std::int64_t i = a.lo; i < a.hi; ++i) {
          const std::int64_t id = a.start + i * g.d[0];
          for (std::int64_t j = b.lo; j < b.hi; ++j) {
            const float* row = xp + (id * g.in[1] + b.start + j * g.d[1]) * g.in[2];
            for (std::int64_t k = c.lo; k < c.hi; ++k) {
              const float v = row[c.start + k * g.d[2]];
              if (v > best || std::isnan(v)) best = v;
              if (std::isnan(best)) return best;
            }
          }
        }
        return best;
      });
}

void average_pool(const Node& node, std::span<const Tensor* const> inputs,
                  std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const Geometry3 g = pool_geometry(node, x);
  const bool include_pad = node.attr_int("count_include_pad", 0) != 0;
  const std::int64_t planes = x.shape()[0] * x.shape()[1];
  for_each_window(
      g, planes, x.data<float>(), outputs[0].data<float>(),
      [&](const float* xp, const AxisWindow& a, const AxisWindow& b, const AxisWindow& c) {
        double sum = 0.0;
        for (std::int64_t i = a.lo; i < a.hi; ++i) {
          const std::int64_t id = a.start + i * g.d[0];
          for (std::int64_t j = b.lo; j < b.hi; ++j) {
            const float* row = xp + (id * g.in[1] + b.start + j * g.d[1]) * g.in[2];
            for (std::int64_t k = c.lo; k < c.hi; ++k) sum += row[c.start + k * g.d[2]];
          }
        }
        const std::int64_t count = include_pad ? a.padded_count * b.padded_count * c.padded_count
                                               : (a.hi - a.lo) * (b.hi - b.lo) * (c.hi - c.lo);
        return count > 0 ? static_cast<float>(sum / static_cast<double>(count)) : 0.0f;
      });
}

void global_average_pool(const Node&, std::span<const Tensor* const> inputs,
                         std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const std::int64_t planes = x.shape()[0] * x.shape()[1];
  const std::int64_t size = planes == 0 ? 0 : x.numel() / planes;
  const float* xd = x.data<float>();
  float* yd = outputs[0].data<float>();
  for (std::int64_t p = 0; p < planes; ++p) {
    double sum = 0.0;
    for (std::int64_t i = 0; i < size; ++i) sum += xd[p * size + i];
    yd[p] = static_cast<float>(sum / static_cast<double>(size));
  }
}

void global_max_pool(const Node&, std::span<const Tensor* const> inputs,
                     std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const std::int64_t planes = x.shape()[0] * x.shape()[1];
  const std::int64_t size = planes == 0 ? 0 : x.numel() / planes;
  const float* xd = x.data<float>();
  float* yd = outputs[0].data<float>();
  for (std::int64_t p = 0; p < planes; ++p) {
    float best = -std::numeric_limits<float>::infinity();
    for (std::int64_t i = 0; i < size; ++i) {
      const float v = xd[p * size + i];
      if (v > best || std::isnan(v)) best = v;
      if (std::isnan(best)) break;
    }
    yd[p] = best;
  }
}

// One bilinear sample of RoiAlign: four pixels of a plane and their weights.
struct BilinearTap {
  std::array<std::int64_t, 4> pos{};
  std::array<double, 4> weight{};  // all 0 for a sample outside the image
};

// ONNX's sampling rule: a sample more than one pixel outside the image contributes 0;
// otherwise coordinates below 0 clamp to 0 and those past the last row/column to it.
BilinearTap bilinear_tap(double y, double x, std::int64_t h, std::int64_t w) {
  BilinearTap t;
  if (y < -1.0 || y > static_cast<double>(h) || x < -1.0 || x > static_cast<double>(w)) return t;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto y_low = static_cast<std::int64_t>(y), x_low = static_cast<std::int64_t>(x);
  std::int64_t y_high = y_low + 1, x_high = x_low + 1;
  if (y_low >= h - 1) {
    y_low = y_high = h - 1;
    y = static_cast<double>(y_low);
  }
  if (x_low >= w - 1) {
    x_low = x_high = w - 1;
    x = static_cast<double>(x_low);
  }
  const double ly = y - static_cast<double>(y_low), lx = x - static_cast<double>(x_low);
  const double hy = 1.0 - ly, hx = 1.0 - lx;
  t.pos = {y_low * w + x_low, y_low * w + x_high, y_high * w + x_low, y_high * w + x_high};
  t.weight = {hy * hx, hy * lx, ly * hx, ly * lx};
  return t;
}

// RoiAlign as ONNX's reference implementation defines it: bin (ph, pw) of a region
// samples a grid_h x grid_w grid at its sub-cell centres. avg divides the sum of the
// samples by the grid size; max takes, like ONNX Runtime, the largest *weighted* pixel
// term of any sample (not the max of interpolated values).
void roi_align(const Node& node, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const float* rois = inputs[1]->data<float>();
  const std::vector<std::int64_t> batch = inputs[2]->to_int64s();
  Tensor& y = outputs[0];
  const std::int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const std::int64_t oh = y.shape()[2], ow = y.shape()[3];
  const bool max_mode = node.attr_string("mode", "avg") == "max";
  const bool half_pixel =
      node.attr_string("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  const double scale = node.attr_float("spatial_scale", 1.0f);
  const std::int64_t ratio = node.attr_int("sampling_ratio", 0);
  const double shift = half_pixel ? 0.5 : 0.0;
  const float* xd = x.data<float>();
  float* yd = y.data<float>();
  for (std::size_t r = 0; r < batch.size(); ++r) {
    if (batch[r] < 0 || batch[r] >= n) {
      fail("{}: batch index {} of roi {} is out of range for a batch of {}", node.describe(),
           batch[r], r, n);
    }
    const float* roi = rois + 4 * r;
    const double x0 = roi[0] * scale - shift, y0 = roi[1] * scale - shift;
    double roi_w = roi[2] * scale - shift - x0, roi_h = roi[3] * scale - shift - y0;
    if (!half_pixel) {
      // The legacy mode forces malformed regions to 1x1.
      roi_w = std::max(roi_w, 1.0);
      roi_h = std::max(roi_h, 1.0);
    }
    const double bin_h = roi_h / static_cast<double>(oh), bin_w = roi_w / static_cast<double>(ow);
    // Adaptive: about one sample per input pixel. A negative size samples nothing.
    const auto grid_h = ratio > 0 ? ratio : static_cast<std::int64_t>(std::ceil(bin_h));
    const auto grid_w = ratio > 0 ? ratio : static_cast<std::int64_t>(std::ceil(bin_w));
    const std::int64_t samples =
        std::max<std::int64_t>(grid_h, 0) * std::max<std::int64_t>(grid_w, 0);
    const double count = static_cast<double>(std::max<std::int64_t>(grid_h * grid_w, 1));
    // Taps depend on the region only: computed once, shared by every channel.
    std::vector<BilinearTap> taps;
    taps.reserve(static_cast<std::size_t>(oh * ow * samples));
    for (std::int64_t ph = 0; ph < oh; ++ph) {
      for (std::int64_t pw = 0; pw < ow; ++pw) {
        for (std::int64_t iy = 0; iy < grid_h; ++iy) {
          const double sy = y0 + static_cast<double>(ph) * bin_h +
                            (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
          for (std::int64_t ix = 0; ix < grid_w; ++ix) {
            const double sx = x0 + static_cast<double>(pw) * bin_w +
                              (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
            taps.push_back(bilinear_tap(sy, sx, h, w));
          }
        }
      }
    }
    for (std::int64_t ch = 0; ch < c; ++ch) {
      const float* plane = xd + (batch[r] * c + ch) * h * w;
      float* out = yd + (static_cast<std::int64_t>(r) * c + ch) * oh * ow;
      const BilinearTap* tap = taps.data();
      for (std::int64_t bin = 0; bin < oh * ow; ++bin) {
        double acc = 0.0;
        for (std::int64_t s = 0; s < samples; ++s, ++tap) {
          if (max_mode) {
            double best = tap->weight[0] * plane[tap->pos[0]];
            for (int i = 1; i < 4; ++i) best = std::max(best, tap->weight[i] * plane[tap->pos[i]]);
            acc = s == 0 ? best : std::max(acc, best);
          } else {
            for (int i = 0; i < 4; ++i) acc += tap->weight[i] * plane[tap->pos[i]];
          }
        }
        out[bin] = static_cast<float>(max_mode ? acc : acc / count);
      }
    }
  }
}

}  // namespace

void register_pooling_kernels(ReferenceKernelTable& table) {
  table["MaxPool"] = max_pool;
  table["AveragePool"] = average_pool;
  table["GlobalAveragePool"] = global_average_pool;
  table["GlobalMaxPool"] = global_max_pool;
  table["RoiAlign"] = roi_align;
}

}  // namespace orchid
