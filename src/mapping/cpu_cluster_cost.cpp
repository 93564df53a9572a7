// CPU-cluster communication and oversubscription terms (see cpu_cluster_cost.hpp).
#include "mapping/cpu_cluster_cost.hpp"

#include <algorithm>
#include <cmath>

namespace orchid::mapping {

namespace {

double message(double bytes, const CpuNetwork& net) {
  return net.latency_s + bytes / (net.gbs * 1e9);
}

double rounds(int p) {
  return std::ceil(std::log2(static_cast<double>(p)));
}

}  // namespace

bool cpu_runner_splits(const Layer& layer, Strategy s, int p) {
  if (p <= 1 || !strategy_valid(layer, s, p)) return false;
  switch (s) {
    case Strategy::None:
      return false;
    case Strategy::Batch:
      return true;
    case Strategy::Spatial:
      return layer.kind == LayerKind::Conv || layer.kind == LayerKind::Fc;
    default:  // channel strategies: dense convolutions and constant-weight Gemm/MatMul
      return layer.kind == LayerKind::Fc ||
             (layer.kind == LayerKind::Conv && layer.conv_groups == 1);
  }
}

double cpu_layer_comm_seconds(const Layer& layer, Strategy s, int p, const CpuNetwork& net) {
  if (!cpu_runner_splits(layer, s, p)) return 0;
  constexpr double kBytes = 4;  // float32
  const double batch = static_cast<double>(layer.batch);
  // Per sample: the linear op's activation input and output.
  const double in = layer.input_elements() / batch * kBytes;
  const double out =
      (layer.kind == LayerKind::Conv ? static_cast<double>(layer.m) * layer.r * layer.c
                                     : static_cast<double>(layer.m) * layer.k) *
      kBytes;
  switch (s) {
    case Strategy::Batch:
      return cpu_batch_comm_seconds(layer, p, net, true, true);
    case Strategy::OutChannel:
      return batch * (rounds(p) * message(in, net) + (p - 1) * message(out / p, net));
    case Strategy::InChannelAllReduce:
    case Strategy::InChannelReduceScatter:
      return batch * ((p - 1) * message(in / p, net) + rounds(p) * message(out, net));
    case Strategy::Spatial:
      return cpu_spatial_comm_seconds(layer, p, net, true, true);
    default:
      return 0;
  }
}

double cpu_batch_comm_seconds(const Layer& layer, int p, const CpuNetwork& net, bool scatter,
                              bool gather) {
  if (!cpu_runner_splits(layer, Strategy::Batch, p)) return 0;
  constexpr double kBytes = 4;  // float32
  // Whole batch, blocks of samples; the root sends or receives p - 1 blocks.
  const double in = layer.input_elements() * kBytes;
  const double result = layer.output_elements() * kBytes;
  return (p - 1) * ((scatter ? message(in / p, net) : 0) + (gather ? message(result / p, net) : 0));
}

double cpu_spatial_comm_seconds(const Layer& layer, int p, const CpuNetwork& net, bool scatter,
                                bool gather) {
  if (!cpu_runner_splits(layer, Strategy::Spatial, p)) return 0;
  constexpr double kBytes = 4;  // float32
  const double batch = static_cast<double>(layer.batch);
  const double in = layer.input_elements() / batch * kBytes;  // per sample
  const double out =
      (layer.kind == LayerKind::Conv ? static_cast<double>(layer.m) * layer.r * layer.c
                                     : static_cast<double>(layer.m) * layer.k) *
      kBytes;
  double halo = 0;  // input rows a block reads beyond its share
  if (layer.kind == LayerKind::Conv && layer.r > 0) {
    const double rows_in = static_cast<double>((layer.r - 1) * layer.s + layer.k);
    halo = std::max(0.0, static_cast<double>(layer.k - layer.s)) / rows_in * in;
  }
  // Scattered by the leader, or (inside a chain) only the halo rows from the two
  // neighbours, all members at once.
  const double input =
      scatter ? (p - 1) * message(in / p + halo, net) : (halo > 0 ? 2 * message(halo / 2, net) : 0);
  return batch * (input + (gather ? (p - 1) * message(out / p, net) : 0));
}

double cpu_oversubscription(int busy_threads, const CpuNetwork& net) {
  if (net.cores <= 0) return 1;
  return std::max(1.0, static_cast<double>(busy_threads) / net.cores);
}

}  // namespace orchid::mapping
