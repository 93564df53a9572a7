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

// A layer's subgraph ready to time: orchestrated, its executor warmed up (page faults,
// oneDNN JIT), random inputs. Built in place: the executor refers to the orchestration.
struct PreparedLayer {
  LayerSubgraph sub;
  Orchestration orchestration;
  std::unique_ptr<PlanExecutor> executor;
  TensorMap inputs;
  std::unordered_map<std::string, Tensor> kept;  // results, kept by name as the runner does
};

std::unique_ptr<PreparedLayer> prepare(const Layer& layer, const CostModel& model) {
  auto p = std::make_unique<PreparedLayer>();
  p->sub = layer_subgraph(layer);
  as_grouped_convolution(p->sub.graph, layer);
  OrchestrateOptions options;
  options.time_limit_s = 2;
  p->orchestration = orchestrate(p->sub.graph, model, options);
  p->inputs = make_random_inputs(p->sub.graph, 1);
  p->executor =
      std::make_unique<PlanExecutor>(p->orchestration.fission.graph, p->orchestration.optimal,
                                     p->orchestration.fission.alternatives);
  p->executor->execute(p->inputs);
  return p;
}

// One run as the plan runner runs a layer: the layer before has just written its inputs
// (they are read into the cache first), which are handed over as views; its results are
// copied out and kept by name (on a 1 us layer this bookkeeping is a fifth of it).
// Seconds of the thread's CPU time (`cpu_clock`, less the clock's own cost) or wall time,
// and the wall time in `wall`.
double timed_run(PreparedLayer& p, bool cpu_clock, double& wall) {
  for (const auto& [name, tensor] : p.inputs) touch(tensor);
  const double c0 = thread_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  TensorMap feed;
  for (const auto& [name, tensor] : p.inputs) {
    feed.emplace(
        name, Tensor::view(tensor.dtype(), tensor.shape(), const_cast<std::byte*>(tensor.raw())));
  }
  for (auto& [name, tensor] : p.executor->run(feed)) p.kept[name] = std::move(tensor);
  wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return cpu_clock ? std::max(0.0, thread_cpu_seconds() - c0 - thread_clock_overhead_seconds())
                   : wall;
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// Runs `f` with the rank's OpenMP thread count, the caller's afterwards.
template <class F>
auto with_threads(int threads, F&& f) {
  struct Restore {
    int saved = omp_get_max_threads();
    ~Restore() { omp_set_num_threads(saved); }
  } restore;
  omp_set_num_threads(threads);
  return f();
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
    return with_threads(design.threads, [&] {
      std::unique_ptr<PreparedLayer> p = prepare(layer, cpu_model_);
      // One thread: its CPU time, which other processes on the machine do not inflate (on
      // an idle core it equals the wall time). More threads: wall time.
      const bool cpu_clock = design.threads == 1;
      std::vector<double> times;
      double spent = 0;
      // 3 runs at least; up to 25 while they add up to less than the target (a layer of a
      // few microseconds varies by a microsecond between runs).
      while (times.size() < 3 || (spent < target_seconds_ && times.size() < 25)) {
        evict_caches(evict_bytes_);
        double wall = 0;
        times.push_back(timed_run(*p, cpu_clock, wall));
        spent += wall;
      }
      // The median run: the fastest is a run whose inputs stayed hot against the odds.
      return median(times) * p->sub.repeat;
    });
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
    return it->second.cost(samples);
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
  const Measured& m =
      memo_.emplace(key, Measured{one, design, seconds, seconds, fallback, memo_.size()})
          .first->second;
  return m.cost(samples);
}

void MeasuredCpuCostProvider::measure_in_context(double context_seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto t0 = std::chrono::steady_clock::now();
  reuse_freed_memory();
  // Every subgraph of the memo, in the order it was first asked for. The evaluator asks
  // layer by layer, so a layer's variants (whole, and its shards by strategy and group
  // size) sit beside each other in the workload's order.
  struct Entry {
    Measured* measured;
    std::unique_ptr<PreparedLayer> prepared;
    std::vector<double> first, next;  // per round: its first run and the one after
  };
  std::vector<Entry> entries;
  for (auto& [key, m] : memo_) {
    if (m.fallback) continue;
    try {
      entries.push_back(
          {&m,
           with_threads(m.design.threads, [&] { return prepare(m.layer, cpu_model_); }),
           {},
           {}});
    } catch (const std::exception&) {
      // It ran alone, so this is rare (memory); it keeps its time alone.
    }
  }
  if (entries.empty()) return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.measured->order < b.measured->order; });
  // One slot per layer, holding its variants. A round runs one variant of every layer,
  // the next round the next variant: each round is a model as one plan would run it, not
  // every variant of a layer back to back (which evicts more than any plan does).
  std::vector<std::vector<Entry*>> slots;
  for (Entry& e : entries) {
    if (slots.empty() || slots.back().front()->measured->layer.name != e.measured->layer.name) {
      slots.emplace_back();
    }
    slots.back().push_back(&e);
  }
  std::size_t variants = 1;
  for (const auto& slot : slots) variants = std::max(variants, slot.size());
  const std::size_t min_rounds = 5 * variants, max_rounds = 25 * variants;
  double spent = 0;
  std::size_t rounds = 0;
  const int saved_threads = omp_get_max_threads();
  try {
    while (rounds < min_rounds || (spent < context_seconds && rounds < max_rounds)) {
      for (const auto& slot : slots) {
        Entry& e = *slot[rounds % slot.size()];
        omp_set_num_threads(e.measured->design.threads);
        const bool cpu_clock = e.measured->design.threads == 1;
        const double repeat = e.prepared->sub.repeat;
        double wall = 0;
        e.first.push_back(timed_run(*e.prepared, cpu_clock, wall) * repeat);
        spent += wall;
        e.next.push_back(timed_run(*e.prepared, cpu_clock, wall) * repeat);
        spent += wall;
      }
      ++rounds;
    }
  } catch (const std::exception&) {
    // Each ran alone before, so this is rare: the rounds so far stand.
  }
  omp_set_num_threads(saved_threads);
  stats_.context_sum_s = stats_.alone_sum_s = 0;
  for (Entry& e : entries) {
    if (e.first.size() < 3) continue;  // keeps its time alone
    stats_.alone_sum_s += e.measured->seconds;
    e.measured->seconds = median(e.first);
    e.measured->next_seconds = median(e.next);
    stats_.context_sum_s += e.measured->seconds;
  }
  stats_.context_rounds = static_cast<int>(rounds);
  stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

MeasuredCpuCostStats MeasuredCpuCostProvider::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace orchid::mapping
