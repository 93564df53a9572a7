// CPU-cluster communication and oversubscription terms (see cpu_cluster_cost.hpp).
#include "mapping/cpu_cluster_cost.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

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
      return batch * (net.split_s + rounds(p) * message(in, net) + (p - 1) * message(out / p, net));
    case Strategy::InChannelAllReduce:
    case Strategy::InChannelReduceScatter:
      return batch * (net.split_s + (p - 1) * message(in / p, net) + rounds(p) * message(out, net));
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
  // Whole batch, blocks of samples; the root sends or receives a block to or from every
  // other member that has samples (a batch smaller than the group leaves the rest with
  // none, and their empty blocks cost next to nothing: tiny_conv's 4-rank data-parallel plan,
  // batch 2, was priced 19 us with 3 blocks gathered and ran in 12).
  const int holders =
      static_cast<int>(std::min<std::int64_t>(p, std::max<std::int64_t>(1, layer.batch)));
  const double in = layer.input_elements() * kBytes;
  const double result = layer.output_elements() * kBytes;
  return (holders - 1) * ((scatter ? message(in / holders, net) : 0) +
                          (gather ? message(result / holders, net) : 0));
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
  return batch * (net.split_s + input + (gather ? (p - 1) * message(out / p, net) : 0));
}

double cpu_oversubscription(int busy_threads, const CpuNetwork& net) {
  if (net.cores <= 0) return 1;
  return std::max(1.0, static_cast<double>(busy_threads) / net.cores);
}

int cpu_busy_ranks(const Layer& layer, Strategy s, int p) {
  if (!cpu_runner_splits(layer, s, p)) return 1;
  if (s == Strategy::Batch) return static_cast<int>(std::min<std::int64_t>(p, layer.batch));
  return p;
}

SharedCoreTimes simulate_shared_cores(const std::vector<SharedCoreLayer>& layers,
                                      const std::vector<std::vector<int>>& group_order, int cores) {
  const std::size_t n = layers.size();
  constexpr double kNever = std::numeric_limits<double>::infinity();
  SharedCoreTimes t;
  t.start.assign(n, kNever);
  t.computed.assign(n, kNever);
  t.finish.assign(n, kNever);
  enum class State { Waiting, Computing, Messaging, Done };
  std::vector<State> state(n, State::Waiting);
  std::vector<double> left(n);
  for (std::size_t l = 0; l < n; ++l) left[l] = std::max(0.0, layers[l].work);
  std::vector<std::size_t> next(group_order.size(), 0);  // per group: its next layer
  std::vector<bool> busy(group_order.size(), false);
  std::size_t done = 0;
  double now = 0;
  // Each pass starts what can start, then advances to the next event.
  while (done < n) {
    double event = kNever;
    for (std::size_t g = 0; g < group_order.size(); ++g) {
      if (busy[g] || next[g] >= group_order[g].size()) continue;
      const int l = group_order[g][next[g]];
      double ready = 0;
      bool known = true;
      for (const auto& [u, delay] : layers[l].ready_after) {
        if (state[u] != State::Done) {
          known = false;
          break;
        }
        ready = std::max(ready, t.finish[u] + delay);
      }
      if (!known) continue;  // a predecessor's finish is an event of its own
      if (ready > now) {
        event = std::min(event, ready);
        continue;
      }
      busy[g] = true;
      ++next[g];
      t.start[l] = now;
      state[l] = State::Computing;
    }
    int threads = 0;
    for (std::size_t l = 0; l < n; ++l) {
      if (state[l] == State::Computing) threads += layers[l].threads;
    }
    const double rate = cores > 0 && threads > cores ? static_cast<double>(cores) / threads : 1.0;
    for (std::size_t l = 0; l < n; ++l) {
      if (state[l] == State::Computing) event = std::min(event, now + left[l] / rate);
      if (state[l] == State::Messaging) event = std::min(event, t.finish[l]);
    }
    if (!(event < kNever)) break;  // nothing can move: a cycle (not produced by callers)
    const double step = event - now;
    now = event;
    for (std::size_t l = 0; l < n; ++l) {
      if (state[l] == State::Computing) {
        left[l] -= step * rate;
        if (left[l] <= 1e-12 * std::max(1.0, layers[l].work)) {
          t.computed[l] = now;
          t.finish[l] = now + std::max(0.0, layers[l].fixed);
          state[l] = State::Messaging;
        }
      }
      if (state[l] == State::Messaging && t.finish[l] <= now) {
        t.finish[l] = std::max(t.finish[l], now);
        state[l] = State::Done;
        busy[layers[l].group] = false;
        ++done;
      }
    }
  }
  return t;
}

}  // namespace orchid::mapping
