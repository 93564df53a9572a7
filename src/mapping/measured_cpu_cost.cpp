// Measured CPU-rank layer costs (see measured_cpu_cost.hpp).
#include "mapping/measured_cpu_cost.hpp"

#include <omp.h>

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <exception>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "eval/random_inputs.hpp"
#include "mapping/layer_subgraph.hpp"
#include "orchestrate/orchestrator.hpp"
#include "runtime/plan_executor.hpp"
#include "util/reuse_freed_memory.hpp"

namespace orchid::mapping {

namespace {

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// What two back-to-back reads of the thread's CPU clock show: the clock's own cost inside
// a timed interval. The clock is a system call (0.6 us on this VM, a tenth of a tiny
// layer) that the plan runner does not make around small layers, so it is taken off.
double thread_clock_overhead_seconds() {
  static const double overhead = [] {
    std::vector<double> d;
    for (int i = 0; i < 201; ++i) {
      const double a = thread_cpu_seconds();
      d.push_back(thread_cpu_seconds() - a);
    }
    std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
    return d[d.size() / 2];
  }();
  return overhead;
}

// layer_subgraph rebuilds a grouped (depthwise) convolution as a dense one with the
// group's input channels, which has the same arithmetic but not the same kernel on the
// CPU executor; the runner executes the real one, so that is what is measured.
void as_grouped_convolution(Graph& graph, const Layer& layer) {
  if (layer.kind != LayerKind::Conv || layer.conv_groups <= 1 || layer.m % layer.conv_groups != 0 ||
      graph.nodes.empty() || graph.nodes[0].op_type != "Conv") {
    return;
  }
  Node& conv = graph.nodes[0];
  TensorInfo& x = graph.tensor(conv.inputs[0]);
  Shape shape = x.shape;
  shape[1] = layer.n * layer.conv_groups;
  graph.set_type(conv.inputs[0], x.dtype, shape);
  conv.attributes["group"] = layer.conv_groups;
}

// Inside a model a layer finds its weights where the rest of the model left the caches
// (its inputs were just written by the layer before), while repeated runs of it alone
// find them hot: on this machine
// MobileNetV2's layers ran 1.7x and ResNet-50's 1.2x slower (CPU time) with the last-level
// cache evicted, as inside the model. Writing `bytes` elsewhere before each timed run
// evicts what the rest of the model would.
std::size_t last_level_cache_bytes() {
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return static_cast<std::size_t>(l3 > 0 ? l3 : (l2 > 0 ? l2 : 32L << 20));
}

void evict_caches(std::size_t bytes) {
  static std::vector<unsigned char> buffer(last_level_cache_bytes() * 3 / 2);
  static unsigned char round = 0;
  ++round;
  bytes = std::min(bytes, buffer.size());
  for (std::size_t i = 0; i < bytes; i += 64) buffer[i] = round;
}

// Reads every cache line of `t` (the sum is kept so the reads are not optimised away).
void touch(const Tensor& t) {
  static std::atomic<unsigned char> sink{0};
  const auto* bytes = reinterpret_cast<const unsigned char*>(t.raw());
  unsigned char sum = 0;
  for (std::size_t i = 0; i < t.nbytes(); i += 64) sum = static_cast<unsigned char>(sum + bytes[i]);
  sink.store(sum, std::memory_order_relaxed);
}

}  // namespace

MeasuredCpuCostProvider::MeasuredCpuCostProvider(const CostModel& cpu_model,
                                                 const LayerCostProvider& others,
                                                 double model_bytes, double target_seconds)
    : cpu_model_(cpu_model),
      others_(others),
      evict_bytes_(static_cast<std::size_t>(
          std::min(model_bytes, static_cast<double>(last_level_cache_bytes()) * 1.5))),
      target_seconds_(target_seconds) {}

double MeasuredCpuCostProvider::measure(const Layer& layer, const Design& design,
                                        std::string& why) const {
  // As the plan runner does: a layer's fresh results reuse freed memory, not new pages.
  reuse_freed_memory();
  try {
    LayerSubgraph sub = layer_subgraph(layer);
    as_grouped_convolution(sub.graph, layer);
    OrchestrateOptions options;
    options.time_limit_s = 2;
    const Orchestration o = orchestrate(sub.graph, cpu_model_, options);
    const TensorMap inputs = make_random_inputs(sub.graph, 1);
    // The rank's thread count for the measurement, the caller's afterwards.
    const int saved_threads = omp_get_max_threads();
    omp_set_num_threads(design.threads);
    PlanExecutor executor(o.fission.graph, o.optimal, o.fission.alternatives);
    executor.execute(inputs);  // warm-up: page faults, oneDNN JIT
    std::vector<double> times;
    double spent = 0;
    // One thread: its CPU time, which other processes on the machine do not inflate (on
    // an idle core it equals the wall time). More threads: wall time.
    const bool cpu_clock = design.threads == 1;
    const double clock_overhead = cpu_clock ? thread_clock_overhead_seconds() : 0;
    std::unordered_map<std::string, Tensor> kept;
    // 3 runs at least; up to 25 while they add up to less than the target (a layer of a
    // few microseconds varies by a microsecond between runs).
    while (times.size() < 3 || (spent < target_seconds_ && times.size() < 25)) {
      evict_caches(evict_bytes_);
      // The layer before has just written this one's inputs: they are in the cache.
      for (const auto& [name, tensor] : inputs) touch(tensor);
      const double c0 = thread_cpu_seconds();
      const auto t0 = std::chrono::steady_clock::now();
      // As the plan runner runs a layer: its inputs handed over as views, its results
      // copied out and kept by name (on a 1 us layer this bookkeeping is a fifth of it).
      TensorMap feed;
      for (const auto& [name, tensor] : inputs) {
        feed.emplace(name, Tensor::view(tensor.dtype(), tensor.shape(),
                                        const_cast<std::byte*>(tensor.raw())));
      }
      for (auto& [name, tensor] : executor.run(feed)) kept[name] = std::move(tensor);
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      times.push_back(cpu_clock ? std::max(0.0, thread_cpu_seconds() - c0 - clock_overhead) : wall);
      spent += wall;
    }
    omp_set_num_threads(saved_threads);
    // The median run: the fastest is a run whose inputs stayed hot against the odds.
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    return times[times.size() / 2] * sub.repeat;
  } catch (const std::exception& e) {
    why = e.what();
    return -1;
  }
}

double MeasuredCpuCostProvider::compute_seconds(const Layer& layer, const Design& design) const {
  if (!design.is_cpu) return others_.compute_seconds(layer, design);
  if (!design.supports_kind(layer.kind)) return -1;
  // The plan runner runs one sample at a time (the model is a batch-1 graph), so one
  // sample is measured and the batch multiplies it.
  const double samples = static_cast<double>(std::max<std::int64_t>(1, layer.batch));
  Layer one = layer;
  one.batch = 1;
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string key =
      fmt::format("{}|{}|{}", design.threads, layer.conv_groups, layer_signature(one));
  if (auto it = memo_.find(key); it != memo_.end()) {
    ++stats_.memo_hits;
    return it->second.seconds * samples;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::string why;
  double seconds = measure(one, design, why);
  const bool fallback = seconds < 0;
  if (fallback) {
    seconds = gpu_roofline_seconds(design.gpu, one);
    if (stats_.fallbacks++ == 0) stats_.first_fallback = fmt::format("{}: {}", layer.name, why);
  } else {
    ++stats_.measured;
  }
  stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  memo_.emplace(key, Measured{one, design, seconds, fallback});
  return seconds * samples;
}

void MeasuredCpuCostProvider::measure_again() {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& [key, m] : memo_) {
    if (m.fallback) continue;
    std::string why;
    const double again = measure(m.layer, m.design, why);
    if (again >= 0) m.seconds = std::min(m.seconds, again);
  }
  ++stats_.passes;
  stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

MeasuredCpuCostStats MeasuredCpuCostProvider::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace orchid::mapping
