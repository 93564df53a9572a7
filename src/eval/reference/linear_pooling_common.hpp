// Helpers shared by the linear and pooling reference kernels: a deterministic
// parallel-for and window geometry padded to three spatial axes.
//
// parallel_for is a tiny deterministic parallel-for for Conv/MatMul/Gemm/pooling.
// Items are split into contiguous chunks, one per thread; each item (an output row or
// channel) is computed entirely by one thread in the same order as the serial loop, so
// results are bit-identical whatever the thread count.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <vector>

#include <omp.h>

#include "ir/ops/window_geometry.hpp"

namespace orchid::reference {

// fn(begin, end) handles items [begin, end). `cost_per_item` is a rough operation
// count; small problems run on the calling thread because threads would only cost.
template <typename Fn>
void parallel_for(std::int64_t items, std::int64_t cost_per_item, Fn&& fn) {
  constexpr std::int64_t kMinWorkPerThread = 1 << 18;
  const std::int64_t hw = std::max<std::int64_t>(1, omp_get_max_threads());
  const std::int64_t by_work = std::max<std::int64_t>(
      1, items * std::max<std::int64_t>(cost_per_item, 1) / kMinWorkPerThread);
  const std::int64_t threads = std::min({hw, std::int64_t{16}, items, by_work});
  if (threads <= 1) {
    if (items > 0) fn(std::int64_t{0}, items);
    return;
  }
  // OpenMP, like oneDNN and the fused loops: one thread pool for the whole process.
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(threads));
#pragma omp parallel for num_threads(static_cast <int>(threads)) schedule(static, 1)
  for (std::int64_t t = 0; t < threads; ++t) {
    const std::int64_t begin = items * t / threads;
    const std::int64_t end = items * (t + 1) / threads;
    try {
      fn(begin, end);
    } catch (...) {
      errors[static_cast<std::size_t>(t)] = std::current_exception();
    }
  }
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// Indices i in [0, count) with 0 <= i * stride + offset < limit, as [lo, hi).
inline void valid_range(std::int64_t offset, std::int64_t stride, std::int64_t count,
                        std::int64_t limit, std::int64_t& lo, std::int64_t& hi) {
  lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const std::int64_t top = limit - 1 - offset;  // need i * stride <= top
  hi = top < 0 ? 0 : std::min(count, top / stride + 1);
  if (hi < lo) hi = lo;
}

// Geometry padded to three spatial axes (leading axes of size 1), so one loop nest
// serves 1-D, 2-D and 3-D windows.
struct Geometry3 {
  std::array<std::int64_t, 3> in{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, d{1, 1, 1}, pad{0, 0, 0},
      pad_end{0, 0, 0}, out{1, 1, 1};

  std::int64_t in_volume() const { return in[0] * in[1] * in[2]; }
  std::int64_t k_volume() const { return k[0] * k[1] * k[2]; }
  std::int64_t out_volume() const { return out[0] * out[1] * out[2]; }
};

inline Geometry3 to_3d(const WindowGeometry& g) {
  Geometry3 r;
  const std::size_t shift = 3 - g.rank();
  for (std::size_t i = 0; i < g.rank(); ++i) {
    r.in[shift + i] = g.input[i];
    r.k[shift + i] = g.kernel[i];
    r.s[shift + i] = g.strides[i];
    r.d[shift + i] = g.dilations[i];
    r.pad[shift + i] = g.pad_begin[i];
    r.pad_end[shift + i] = g.pad_end[i];
    r.out[shift + i] = g.output[i];
  }
  return r;
}

// Direct grouped convolution in NC[D]HW: y[n, m] = bias[m] (zero without bias) plus, for
// each input channel of m's group and each kernel position in that fixed order, w * x.
// Items are whole output channels (see parallel_for). Float for Conv, exact int32 for
// ConvInteger/QLinearConv.
template <typename T>
void direct_conv(const Geometry3& g, std::int64_t batch, std::int64_t channels,
                 std::int64_t out_channels, std::int64_t group, const T* x, const T* w,
                 const T* bias, T* y) {
  const std::int64_t cg = channels / group;
  const std::int64_t mg = out_channels / group;
  const std::int64_t in_vol = g.in_volume();
  const std::int64_t out_vol = g.out_volume();
  const std::int64_t k_vol = g.k_volume();
  parallel_for(batch * out_channels, cg * k_vol * out_vol,
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t item = begin; item < end; ++item) {
                   const std::int64_t n = item / out_channels;
                   const std::int64_t m = item % out_channels;
                   T* yp = y + item * out_vol;
                   std::fill(yp, yp + out_vol, bias ? bias[m] : T{0});
                   const std::int64_t first_c = (m / mg) * cg;
                   for (std::int64_t c = 0; c < cg; ++c) {
                     const T* xp = x + (n * channels + first_c + c) * in_vol;
                     const T* wp = w + (m * cg + c) * k_vol;
                     for (std::int64_t kd = 0; kd < g.k[0]; ++kd) {
                       std::int64_t od0, od1;
                       const std::int64_t offd = kd * g.d[0] - g.pad[0];
                       valid_range(offd, g.s[0], g.out[0], g.in[0], od0, od1);
                       for (std::int64_t kh = 0; kh < g.k[1]; ++kh) {
                         std::int64_t oh0, oh1;
                         const std::int64_t offh = kh * g.d[1] - g.pad[1];
                         valid_range(offh, g.s[1], g.out[1], g.in[1], oh0, oh1);
                         for (std::int64_t kw = 0; kw < g.k[2]; ++kw) {
                           std::int64_t ow0, ow1;
                           const std::int64_t offw = kw * g.d[2] - g.pad[2];
                           valid_range(offw, g.s[2], g.out[2], g.in[2], ow0, ow1);
                           const T wv = wp[(kd * g.k[1] + kh) * g.k[2] + kw];
                           const std::int64_t sw = g.s[2];
                           for (std::int64_t od = od0; od < od1; ++od) {
                             const std::int64_t id = od * g.s[0] + offd;
                             for (std::int64_t oh = oh0; oh < oh1; ++oh) {
                               const std::int64_t ih = oh * g.s[1] + offh;
                               const T* xr = xp + (id * g.in[1] + ih) * g.in[2] + offw;
                               T* yr = yp + (od * g.out[1] + oh) * g.out[2];
                               if (sw == 1) {  // unit stride: a loop the compiler vectorises
                                 for (std::int64_t ow = ow0; ow < ow1; ++ow) yr[ow] += wv * xr[ow];
                               } else {
                                 for (std::int64_t ow = ow0; ow < ow1; ++ow)
                                   yr[ow] += wv * xr[ow * sw];
                               }
                             }
                           }
                         }
                       }
                     }
                   }
                 }
               });
}

}  // namespace orchid::reference
