// The analytic per-layer models; formulas in layer_cost.hpp and the mapping notes.
#include "mapping/layer_cost.hpp"

#include <algorithm>
#include <cmath>

namespace orchid::mapping {

namespace {

double ceil_div(std::int64_t a, std::int64_t b) {
  return static_cast<double>((a + b - 1) / b);
}

// DRAM <-> on-chip port, bits per second.
double chip_bits_per_second(const Design& d) {
  return d.port_bits * d.freq_mhz * 1e6;
}

// FC or matmul columns on a conv engine: a 1x1 conv over K output pixels laid out on
// the tile's rows and columns.
double fc_on_conv_engine(const Design& d, std::int64_t m, std::int64_t n, std::int64_t cols) {
  const std::int64_t c = std::min<std::int64_t>(cols, d.tc);
  const std::int64_t r = (cols + c - 1) / c;
  return conv_core_seconds(d, m, n, r, c, 1);
}

}  // namespace

double conv_core_seconds(const Design& d, std::int64_t m, std::int64_t n, std::int64_t r,
                         std::int64_t c, std::int64_t k) {
  const double bw = chip_bits_per_second(d);
  const double t_w = static_cast<double>(d.tm) * d.tn * k * k * d.dtype_bits / bw;
  const double t_i = static_cast<double>(d.tn) * d.tr_in * d.tc_in * d.dtype_bits / bw;
  const double t_o = static_cast<double>(d.tm) * d.tr * d.tc * d.dtype_bits / bw;
  const double t_c = (2.0 * d.tr * d.tc * d.tm * d.tn * k * k / 1e9) / d.throughput_gops;
  return ceil_div(r, d.tr) * ceil_div(c, d.tc) * ceil_div(m, d.tm) *
         (ceil_div(n, d.tn) * (t_w + t_i + t_c) + t_o);
}

double fc_core_seconds(const Design& d, std::int64_t m, std::int64_t n, std::int64_t k) {
  const double bw = chip_bits_per_second(d);
  const double t_w = static_cast<double>(m) * n * d.dtype_bits / bw;
  const double t_i = static_cast<double>(n) * k * d.dtype_bits / bw;
  const double t_o = static_cast<double>(m) * k * d.dtype_bits / bw;
  const double t_c = 2.0 * m * n * k / 1e9 / d.throughput_gops;
  return std::max({t_w + t_i, t_c, t_o});
}

double lstm_core_seconds(const Design& d, std::int64_t hidden, std::int64_t dimen,
                         std::int64_t iter, std::int64_t gates) {
  const double bw = chip_bits_per_second(d);
  const double t_in = static_cast<double>(dimen + hidden) * d.dtype_bits / bw;
  const double t_c = 2.0 * static_cast<double>(gates) *
                     (static_cast<double>(hidden) * dimen + static_cast<double>(hidden) * hidden) /
                     1e9 / d.throughput_gops;
  const double t_out = static_cast<double>(hidden) * d.dtype_bits / bw;
  return static_cast<double>(iter) * std::max({t_in, t_c, t_out});
}

double cheap_core_seconds(const Design& d, double elems) {
  return 2.0 * elems * d.dtype_bits / chip_bits_per_second(d);
}

double gpu_roofline_seconds(const GpuSpec& gpu, const Layer& l) {
  const double bytes = 4.0 * (l.weight_elements() + l.input_elements() + l.output_elements());
  const double t =
      std::max(l.ops() / (gpu.peak_fp32_gflops * 1e9), bytes / (gpu.dram_bandwidth_gbs * 1e9));
  return gpu.launch_overhead_us * 1e-6 + t;
}

double AnalyticCostProvider::compute_seconds(const Layer& l, const Design& d) const {
  if (!d.supports_kind(l.kind)) return -1;
  if (d.is_gpu || d.is_cpu) return gpu_roofline_seconds(d.gpu, l);
  const double b = static_cast<double>(l.batch);
  const double epilogue = l.elems > 0 && l.kind != LayerKind::Cheap
                              ? cheap_core_seconds(d, static_cast<double>(l.elems) * b)
                              : 0;
  const bool conv_engine = d.type == "CNN";
  switch (l.kind) {
    case LayerKind::Conv:
      return b * conv_core_seconds(d, l.m, l.n, l.r, l.c, l.k) + epilogue;
    case LayerKind::Fc: {
      const std::int64_t cols = l.k * l.batch;
      return (conv_engine ? fc_on_conv_engine(d, l.m, l.n, cols)
                          : fc_core_seconds(d, l.m, l.n, cols)) +
             epilogue;
    }
    case LayerKind::MatMul: {
      const double products = static_cast<double>(l.g) * b;
      return products * (conv_engine ? fc_on_conv_engine(d, l.k, l.n, l.m)
                                     : fc_core_seconds(d, l.k, l.n, l.m)) +
             epilogue;
    }
    case LayerKind::Lstm:
      return b * lstm_core_seconds(d, l.hidden, l.dimen, l.iter, l.gates) + epilogue;
    case LayerKind::Cheap:
      return cheap_core_seconds(d, static_cast<double>(l.elems) * b);
  }
  return -1;
}

const LayerCostProvider& default_cost_provider() {
  static const AnalyticCostProvider provider;
  return provider;
}

double host_transfer_seconds(const Design& d, const Layer& l, XferFlags flags, double host_gbs) {
  const double bits = host_gbs * 1e9 * 8;
  const double b = static_cast<double>(l.batch);
  double in = 0;
  double out = 0;
  if (flags.weights) in += l.weight_elements();
  if (l.kind == LayerKind::Conv) {
    if (flags.ifm) in += b * static_cast<double>(l.n) * (l.r * 2) * (l.c * 2);
    if (flags.ofm) out += b * static_cast<double>(l.m) * l.r * l.c;
  } else {
    if (flags.ifm) in += l.input_elements();
    if (flags.ofm) out += l.output_elements();
  }
  return (in + out) * d.dtype_bits / bits;
}

}  // namespace orchid::mapping
