// Reference kernels of the pooling op family. Windows are walked directly; averages
// are summed in double and divided once, so they are as exact as float output allows.
#include <cmath>
#include <limits>

#include "runtime/reference/linear_pooling_common.hpp"
#include "runtime/reference/reference_kernels.hpp"

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

}  // namespace

void register_pooling_kernels(ReferenceKernelTable& table) {
  table["MaxPool"] = max_pool;
  table["AveragePool"] = average_pool;
  table["GlobalAveragePool"] = global_average_pool;
  table["GlobalMaxPool"] = global_max_pool;
}

}  // namespace orchid
