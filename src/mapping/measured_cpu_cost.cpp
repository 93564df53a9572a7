// Measured CPU-rank layer costs (see measured_cpu_cost.hpp).
#include "mapping/measured_cpu_cost.hpp"

#include <omp.h>

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <exception>
#include <set>
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

// A layer's subgraph ready to instantiate: orchestrated, with random inputs.
struct Prototype {
  LayerSubgraph sub;
  Orchestration orchestration;
  TensorMap inputs;
};

std::unique_ptr<Prototype> make_prototype(LayerSubgraph sub, const CostModel& model) {
  auto p = std::make_unique<Prototype>();
  p->sub = std::move(sub);
  OrchestrateOptions options;
  options.time_limit_s = 2;
  p->orchestration = orchestrate(p->sub.graph, model, options);
  p->inputs = make_random_inputs(p->sub.graph, 1);
  return p;
}

std::unique_ptr<Prototype> make_prototype(const Layer& layer, const CostModel& model) {
  LayerSubgraph sub = layer_subgraph(layer);
  as_grouped_convolution(sub.graph, layer);
  return make_prototype(std::move(sub), model);
}

// An executor of a prototype, warmed up (page faults, oneDNN JIT). Each packs its own
// copy of the weights, as every layer of a model has its own.
struct Instance {
  const Prototype* prototype = nullptr;
  std::unique_ptr<PlanExecutor> executor;
  std::unordered_map<std::string, Tensor> kept;  // results, kept by name as the runner does
};

std::unique_ptr<Instance> make_instance(const Prototype& p) {
  auto i = std::make_unique<Instance>();
  i->prototype = &p;
  i->executor = std::make_unique<PlanExecutor>(
      p.orchestration.fission.graph, p.orchestration.optimal, p.orchestration.fission.alternatives);
  i->executor->execute(p.inputs);
  return i;
}

// One run as the plan runner runs a layer: the layer before has just written its inputs
// (they are read into the cache first), which are handed over as views; its results are
// copied out and kept by name (on a 1 us layer this bookkeeping is a fifth of it).
// Seconds of the thread's CPU time (`cpu_clock`, less the clock's own cost) or wall time,
// and the wall time in `wall`.
double timed_run(Instance& p, bool cpu_clock, double& wall) {
  const TensorMap& inputs = p.prototype->inputs;
  for (const auto& [name, tensor] : inputs) touch(tensor);
  const double c0 = thread_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  TensorMap feed;
  for (const auto& [name, tensor] : inputs) {
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
      const std::unique_ptr<Prototype> prototype = make_prototype(layer, cpu_model_);
      const std::unique_ptr<Instance> p = make_instance(*prototype);
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
      return median(times) * prototype->sub.repeat;
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
  note_occurrence(layer, key);
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
      memo_.emplace(key, Measured{one, design, seconds, seconds, fallback}).first->second;
  return m.cost(samples);
}

void MeasuredCpuCostProvider::note_occurrence(const Layer& layer, const std::string& key) const {
  auto [it, added] = occurrence_of_.emplace(layer.name, occurrences_.size());
  if (added) occurrences_.push_back({layer, {}});
  std::vector<std::string>& keys = occurrences_[it->second].keys;
  if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
}

void MeasuredCpuCostProvider::measure_in_context(const Graph* model, double context_seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto t0 = std::chrono::steady_clock::now();
  reuse_freed_memory();
  // One prototype per subgraph measured alone (built when first needed; null: it failed).
  std::map<std::string, std::unique_ptr<Prototype>> prototypes;
  std::vector<std::unique_ptr<Prototype>> programs;  // layers as the runner runs them
  auto prototype = [&](const std::string& key) -> const Prototype* {
    auto [it, added] = prototypes.emplace(key, nullptr);
    if (added) {
      const Measured& m = memo_.at(key);
      try {
        if (!m.fallback) {
          it->second =
              with_threads(m.design.threads, [&] { return make_prototype(m.layer, cpu_model_); });
        }
      } catch (const std::exception&) {
        // It ran alone, so this is rare (memory); it keeps its time alone.
      }
    }
    return it->second.get();
  };
  // Rounds run every layer whole (its first variant: the evaluator asks for a layer whole
  // before its shards), each with its own executor and weights: a model's repeated blocks
  // each have theirs (one shared copy stays in the cache: BERT-base's layers then ran
  // faster than in the runner).
  struct Times {
    std::vector<double> first, next;  // per round: its first run and the one after
  };
  std::map<std::string, Times> times;
  struct Run {
    std::unique_ptr<Instance> instance;
    const Measured* measured;
    Times* times;
  };
  std::vector<Run> run;
  const int saved_threads = omp_get_max_threads();
  std::size_t rounds = 0;
  try {
    for (const Occurrence& o : occurrences_) {
      const std::string& key = o.keys.front();
      const Measured& m = memo_.at(key);
      if (m.fallback) continue;
      // The layer as the runner runs it, when the model is at hand and the executor takes it.
      if (model != nullptr) {
        try {
          LayerSubgraph sub{layer_program(*model, o.layer), 1};
          if (!sub.graph.nodes.empty()) {
            programs.push_back(with_threads(
                m.design.threads, [&] { return make_prototype(std::move(sub), cpu_model_); }));
            run.push_back(
                {with_threads(m.design.threads, [&] { return make_instance(*programs.back()); }),
                 &m, &times[key]});
            continue;
          }
        } catch (const std::exception&) {
          // Rebuilt from its dimensions instead.
        }
      }
      const Prototype* p = prototype(key);
      if (p == nullptr) continue;
      run.push_back(
          {with_threads(m.design.threads, [&] { return make_instance(*p); }), &m, &times[key]});
    }
    double spent = 0;
    // A model of microseconds runs more rounds, until 50 ms: a few rounds of it see one
    // moment of a shared machine (tiny_conv's 20 us priced anywhere from 19 to 26).
    for (; rounds < 5 || (spent < context_seconds && (rounds < 25 || spent < 0.05)); ++rounds) {
      for (const Run& e : run) {
        omp_set_num_threads(e.measured->design.threads);
        const bool cpu_clock = e.measured->design.threads == 1;
        const double repeat = e.instance->prototype->sub.repeat;
        double wall = 0;
        e.times->first.push_back(timed_run(*e.instance, cpu_clock, wall) * repeat);
        spent += wall;
        e.times->next.push_back(timed_run(*e.instance, cpu_clock, wall) * repeat);
        spent += wall;
      }
    }
  } catch (const std::exception&) {
    // Each ran alone before, so this is rare: the rounds so far stand.
  }
  run.clear();
  omp_set_num_threads(saved_threads);
  // Whole layers cost their medians in context; a layer's shards their times alone scaled
  // as the whole layer's were. Timing the shards in context too (rounds of every layer's
  // out-channel parts, then of its spatial parts...) priced them below their share of the
  // whole layer, as half a model leaves the caches to itself, and MobileNetV2's 2-rank GA
  // plan, split every way, was priced 15.4 ms and ran 31.7 (data parallelism: 19.1, 20.5).
  struct Scale {
    double first = 1, next = 1;
  };
  std::map<std::string, Scale> scale;  // per whole layer's key
  stats_.context_sum_s = stats_.alone_sum_s = 0;
  for (auto& [key, t] : times) {
    Measured& m = memo_.at(key);
    if (t.first.size() < 3 || !(m.seconds > 0)) continue;  // keeps its time alone
    const Scale sc{median(t.first) / m.seconds, median(t.next) / m.seconds};
    scale[key] = sc;
    stats_.alone_sum_s += m.seconds;
    stats_.context_sum_s += m.seconds * sc.first;
  }
  std::set<std::string> scaled;
  for (const Occurrence& o : occurrences_) {
    auto sc = scale.find(o.keys.front());
    if (sc == scale.end()) continue;
    for (const std::string& key : o.keys) {
      // A shard that is also some layer's whole, or a shard of a repeated block: once.
      if ((key != o.keys.front() && scale.count(key)) || !scaled.insert(key).second) continue;
      Measured& m = memo_.at(key);
      if (m.fallback) continue;
      m.next_seconds = m.seconds * sc->second.next;
      m.seconds *= sc->second.first;
    }
  }
  stats_.context_rounds = static_cast<int>(rounds);
  stats_.runner_programs = programs.size();
  stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

MeasuredCpuCostStats MeasuredCpuCostProvider::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace orchid::mapping
