// Reference kernels of the linear op family: Conv, ConvTranspose, Gemm, MatMul.
// Plain loops in float; every output element is summed in one fixed order (bias, then
// input channel, then kernel position), and threads only split whole output channels
// or rows, so results do not depend on the thread count.
#include <array>
#include <cstring>

#include "eval/reference/linear_pooling_common.hpp"
#include "eval/reference/reference_kernels.hpp"
#include "ir/ops/window_geometry.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

using reference::Geometry3;
using reference::parallel_for;
using reference::to_3d;
using reference::valid_range;

std::vector<std::int64_t> spatial_of(const Shape& shape) {
  return {shape.begin() + 2, shape.end()};
}

void conv(const Node& node, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const Tensor& w = *inputs[1];
  const Tensor* bias = inputs.size() > 2 ? inputs[2] : nullptr;
  Tensor& y = outputs[0];
  const Geometry3 g =
      to_3d(window_geometry(node, spatial_of(x.shape()), spatial_of(w.shape()), false));
  const std::int64_t batch = x.shape()[0];
  const std::int64_t channels = x.shape()[1];
  const std::int64_t out_channels = w.shape()[0];
  const std::int64_t group = node.attr_int("group", 1);
  reference::direct_conv(g, batch, channels, out_channels, group, x.data<float>(), w.data<float>(),
                         bias ? bias->data<float>() : nullptr, y.data<float>());
}

void conv_transpose(const Node& node, std::span<const Tensor* const> inputs,
                    std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const Tensor& w = *inputs[1];
  const Tensor* bias = inputs.size() > 2 ? inputs[2] : nullptr;
  Tensor& y = outputs[0];
  const Geometry3 g =
      to_3d(conv_transpose_geometry(node, spatial_of(x.shape()), spatial_of(w.shape())));
  const std::int64_t batch = x.shape()[0];
  const std::int64_t channels = x.shape()[1];
  const std::int64_t group = node.attr_int("group", 1);
  const std::int64_t cg = channels / group;
  const std::int64_t mg = w.shape()[1];
  const std::int64_t out_channels = mg * group;
  const float* xd = x.data<float>();
  const float* wd = w.data<float>();
  const float* bd = bias ? bias->data<float>() : nullptr;
  float* yd = y.data<float>();
  const std::int64_t in_vol = g.in_volume();
  const std::int64_t out_vol = g.out_volume();
  const std::int64_t k_vol = g.k_volume();

  // Scatter form: each input pixel adds w * x to the outputs it reaches. Items are whole
  // output channels, so the scatter into one channel happens in one thread, in order.
  parallel_for(batch * out_channels, cg * k_vol * in_vol,
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t item = begin; item < end; ++item) {
                   const std::int64_t n = item / out_channels;
                   const std::int64_t m = item % out_channels;
                   const std::int64_t grp = m / mg;
                   const std::int64_t mm = m % mg;
                   float* yp = yd + item * out_vol;
                   const float b0 = bd ? bd[m] : 0.0f;
                   for (std::int64_t i = 0; i < out_vol; ++i) yp[i] = b0;
                   for (std::int64_t c = grp * cg; c < (grp + 1) * cg; ++c) {
                     const float* xp = xd + (n * channels + c) * in_vol;
                     const float* wp = wd + (c * mg + mm) * k_vol;
                     for (std::int64_t kd = 0; kd < g.k[0]; ++kd) {
                       std::int64_t id0, id1;
                       const std::int64_t offd = kd * g.d[0] - g.pad[0];
                       valid_range(offd, g.s[0], g.in[0], g.out[0], id0, id1);
                       for (std::int64_t kh = 0; kh < g.k[1]; ++kh) {
                         std::int64_t ih0, ih1;
                         const std::int64_t offh = kh * g.d[1] - g.pad[1];
                         valid_range(offh, g.s[1], g.in[1], g.out[1], ih0, ih1);
                         for (std::int64_t kw = 0; kw < g.k[2]; ++kw) {
                           std::int64_t iw0, iw1;
                           const std::int64_t offw = kw * g.d[2] - g.pad[2];
                           valid_range(offw, g.s[2], g.in[2], g.out[2], iw0, iw1);
                           const float wv = wp[(kd * g.k[1] + kh) * g.k[2] + kw];
                           const std::int64_t sw = g.s[2];
                           for (std::int64_t id = id0; id < id1; ++id) {
                             const std::int64_t od = id * g.s[0] + offd;
                             for (std::int64_t ih = ih0; ih < ih1; ++ih) {
                               const std::int64_t oh = ih * g.s[1] + offh;
                               const float* xr = xp + (id * g.in[1] + ih) * g.in[2];
                               float* yr = yp + (od * g.out[1] + oh) * g.out[2] + offw;
                               for (std::int64_t iw = iw0; iw < iw1; ++iw)
                                 yr[iw * sw] += wv * xr[iw];
                             }
                           }
                         }
                       }
                     }
                   }
                 }
               });
}

void gemm(const Node& node, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  const Tensor& a = *inputs[0];
  const Tensor& b = *inputs[1];
  const Tensor* c = inputs.size() > 2 ? inputs[2] : nullptr;
  Tensor& y = outputs[0];
  const bool ta = node.attr_int("transA", 0) != 0;
  const bool tb = node.attr_int("transB", 0) != 0;
  const float alpha = node.attr_float("alpha", 1.0f);
  const float beta = node.attr_float("beta", 1.0f);
  const std::int64_t m = y.shape()[0];
  const std::int64_t n = y.shape()[1];
  const std::int64_t k = ta ? a.shape()[0] : a.shape()[1];
  const float* ad = a.data<float>();
  // B as a contiguous K x N matrix so the inner loop runs over contiguous memory.
  std::vector<float> b_kn;
  const float* bd = b.data<float>();
  if (tb) {
    b_kn.resize(static_cast<std::size_t>(k * n));
    for (std::int64_t j = 0; j < n; ++j) {
      for (std::int64_t p = 0; p < k; ++p)
        b_kn[static_cast<std::size_t>(p * n + j)] = bd[j * k + p];
    }
    bd = b_kn.data();
  }
  float* yd = y.data<float>();
  std::int64_t c_rows = 1, c_cols = 1;
  if (c) {
    const Shape& cs = c->shape();
    if (cs.size() == 2) {
      c_rows = cs[0];
      c_cols = cs[1];
    } else if (cs.size() == 1) {
      c_cols = cs[0];
    }
  }
  const float* cd = c ? c->data<float>() : nullptr;
  parallel_for(m, k * n, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      float* yr = yd + i * n;  // zero-filled on arrival
      for (std::int64_t p = 0; p < k; ++p) {
        const float av = ta ? ad[p * m + i] : ad[i * k + p];
        const float* br = bd + p * n;
        for (std::int64_t j = 0; j < n; ++j) yr[j] += av * br[j];
      }
      const float* cr = cd ? cd + (c_rows == 1 ? 0 : i) * c_cols : nullptr;
      for (std::int64_t j = 0; j < n; ++j) {
        float v = alpha * yr[j];
        if (cr) v += beta * cr[c_cols == 1 ? 0 : j];
        yr[j] = v;
      }
    }
  });
}

void matmul(const Node&, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  const Tensor& a = *inputs[0];
  const Tensor& b = *inputs[1];
  Tensor& y = outputs[0];
  Shape as = a.shape();
  Shape bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const std::int64_t m = as[as.size() - 2];
  const std::int64_t k = as.back();
  const std::int64_t n = bs.back();
  // Batch broadcasting: the output's batch index maps to an A and a B matrix index.
  const Shape a_batch(as.begin(), as.end() - 2);
  const Shape b_batch(bs.begin(), bs.end() - 2);
  const std::size_t rank = std::max(a_batch.size(), b_batch.size());
  Shape out_batch(rank);
  std::vector<std::int64_t> a_stride(rank, 0), b_stride(rank, 0);
  {
    std::int64_t sa = 1, sb = 1;
    for (std::size_t r = rank; r-- > 0;) {
      const std::size_t ia = r + a_batch.size();  // < rank: A lacks this axis (size 1)
      const std::size_t ib = r + b_batch.size();
      const std::int64_t da = ia >= rank ? a_batch[ia - rank] : 1;
      const std::int64_t db = ib >= rank ? b_batch[ib - rank] : 1;
      out_batch[r] = da == 1 ? db : da;
      if (da != 1) a_stride[r] = sa;
      if (db != 1) b_stride[r] = sb;
      sa *= da;
      sb *= db;
    }
  }
  const std::int64_t batches = shape_numel(out_batch);
  std::vector<std::int64_t> a_index(static_cast<std::size_t>(batches)),
      b_index(static_cast<std::size_t>(batches));
  for (std::int64_t t = 0; t < batches; ++t) {
    std::int64_t rest = t, ai = 0, bi = 0;
    for (std::size_t r = rank; r-- > 0;) {
      const std::int64_t idx = rest % out_batch[r];
      rest /= out_batch[r];
      ai += idx * a_stride[r];
      bi += idx * b_stride[r];
    }
    a_index[static_cast<std::size_t>(t)] = ai;
    b_index[static_cast<std::size_t>(t)] = bi;
  }
  const float* ad = a.data<float>();
  const float* bd = b.data<float>();
  float* yd = y.data<float>();
  parallel_for(batches * m, k * n, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      const std::int64_t t = row / m;
      const std::int64_t i = row % m;
      const float* ar = ad + (a_index[static_cast<std::size_t>(t)] * m + i) * k;
      const float* bm = bd + b_index[static_cast<std::size_t>(t)] * k * n;
      float* yr = yd + row * n;  // zero-filled on arrival
      for (std::int64_t p = 0; p < k; ++p) {
        const float av = ar[p];
        const float* br = bm + p * n;
        for (std::int64_t j = 0; j < n; ++j) yr[j] += av * br[j];
      }
    }
  });
}

}  // namespace

void register_linear_kernels(ReferenceKernelTable& table) {
  table["Conv"] = conv;
  table["ConvTranspose"] = conv_transpose;
  table["Gemm"] = gemm;
  table["MatMul"] = matmul;
}

}  // namespace orchid
