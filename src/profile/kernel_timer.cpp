#include "profile/kernel_timer.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ORCHID_HAVE_CLFLUSH 1
#endif

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "cost/layout_policy.hpp"
#include "eval/random_inputs.hpp"
#include "orchestrate/candidates.hpp"
#include "orchestrate/plan.hpp"
#include "runtime/plan_executor.hpp"
#include "util/error.hpp"
#include "util/statistics.hpp"

namespace orchid {

Graph kernel_graph(const KernelView& k) {
  if (!k.graph) fail("kernel timer: kernel view has no graph");
  const Graph& src = *k.graph;
  Graph g;
  g.name = "kernel";
  g.opset = src.opset;
  std::set<std::string> copied;
  auto copy_tensor = [&](const std::string& name) {
    if (name.empty() || !copied.insert(name).second) return;
    const TensorInfo& info = src.tensor(name);
    if (!info.has_type) fail("kernel timer: tensor '{}' has no type", name);
    g.add_tensor(name) = info;  // constants share their data
  };
  for (std::size_t i : k.nodes) {
    const Node& node = src.nodes.at(i);
    for (const auto& t : node.inputs) copy_tensor(t);
    for (const auto& t : node.outputs) copy_tensor(t);
    g.nodes.push_back(node);
  }
  for (const auto& t : k.inputs) {
    if (!src.is_constant(t)) g.inputs.push_back(t);
  }
  g.outputs = k.outputs;
  if (g.outputs.empty() && !g.nodes.empty()) {  // nothing read outside: time its last node
    for (const auto& t : g.nodes.back().outputs) {
      if (!t.empty()) g.outputs.push_back(t);
    }
  }
  g.sort_topologically();
  return g;
}

namespace {

// Writes back and evicts every cache line of the constants the kernel reads.
void flush_constants(const Graph& g) {
#ifdef ORCHID_HAVE_CLFLUSH
  std::set<const std::byte*> done;
  for (const Node& node : g.nodes) {
    for (const auto& t : node.inputs) {
      if (t.empty() || !g.is_constant(t)) continue;
      const Tensor& value = *g.tensor(t).data;
      const std::byte* p = value.raw();
      if (!p || !done.insert(p).second) continue;
      for (std::size_t off = 0; off < value.nbytes(); off += 64) _mm_clflush(p + off);
    }
  }
  _mm_mfence();
#else
  (void)g;
#endif
}

}  // namespace

Plan one_kernel_plan(const Graph& g, const std::string& timer) {
  const PrimitiveGraphIndex index(g, {});
  std::vector<std::size_t> all(g.nodes.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  auto plan = build_plan(index, {}, {KernelChoice{all, 0.0}}, "profile");
  if (!plan) fail("{}: the kernel cannot be scheduled", timer);
  return std::move(*plan);
}

KernelTiming repeat_timed_runs(const KernelTimerOptions& options,
                               const std::function<double()>& timed_run_us) {
  std::vector<double> times;
  double spent_us = 0;
  while (static_cast<int>(times.size()) < std::max(1, options.min_reps) ||
         (spent_us < options.target_seconds * 1e6 &&
          static_cast<int>(times.size()) < std::max(options.min_reps, options.max_reps))) {
    times.push_back(timed_run_us());
    spent_us += times.back();
  }
  KernelTiming timing;
  timing.cv = coefficient_of_variation(times);
  std::sort(times.begin(), times.end());
  timing.ok = true;
  timing.reps = static_cast<int>(times.size());
  timing.median_us = median(times);
  timing.p10_us = percentile_of_sorted(times, 0.1);
  timing.p90_us = percentile_of_sorted(times, 0.9);
  timing.min_us = times.front();
  return timing;
}

KernelTiming time_kernel(const KernelView& kernel, const KernelTimerOptions& options) {
  using Clock = std::chrono::steady_clock;
  try {
    const Graph g = kernel_graph(kernel);
    const Plan plan = one_kernel_plan(g, "kernel timer");
    const TensorMap inputs = make_random_inputs(g, options.seed);
    // As inside the model: boundary tensors that convolutions exchange with neighbouring
    // convolutions stay NHWC; the others are plain and cost their reorders.
    PlanExecutorOptions executor_options;
    executor_options.boundary_nhwc = channels_last_boundaries(kernel);
    const std::map<std::string, std::string> no_alternatives;  // must outlive the executor
    PlanExecutor executor(g, plan, no_alternatives, executor_options);
    for (int r = 0; r < std::max(1, options.warmup_runs); ++r) executor.execute(inputs);
    return repeat_timed_runs(options, [&] {
      if (options.flush_weights) flush_constants(g);  // not timed
      const auto start = Clock::now();
      executor.execute(inputs);
      return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    });
  } catch (const std::exception& e) {
    KernelTiming timing;
    timing.error = e.what();
    return timing;
  }
}

}  // namespace orchid
