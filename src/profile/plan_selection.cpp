#include "profile/plan_selection.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>

#include "runtime/plan_executor.hpp"
#include "util/error.hpp"
#include "util/statistics.hpp"

namespace orchid {

namespace {

using Clock = std::chrono::steady_clock;

double run_ms(PlanExecutor& executor, const TensorMap& inputs) {
  const auto start = Clock::now();
  executor.execute(inputs);
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

bool more_rounds(int rounds, double spent_s, const PlanSelectionOptions& o) {
  return rounds < std::max(1, o.min_rounds) ||
         (rounds < std::max(o.min_rounds, o.max_rounds) && spent_s < o.budget_seconds);
}

std::set<std::vector<std::size_t>> kernel_set(const Plan& p) {
  std::set<std::vector<std::size_t>> kernels;
  for (const auto& k : p.kernels) kernels.insert(k.nodes);
  return kernels;
}

}  // namespace

std::vector<const Plan*> plan_candidates(const Orchestration& o) {
  std::vector<const Plan*> out;
  std::set<std::set<std::vector<std::size_t>>> seen;
  auto add = [&](const Plan& p) {
    if (seen.insert(kernel_set(p)).second) out.push_back(&p);
  };
  if (o.ranked.empty()) add(o.optimal);
  for (const Plan& p : o.ranked) add(p);
  add(o.greedy);
  return out;
}

PlanSelection select_fastest_plan(const Graph& graph,
                                  const std::map<std::string, std::string>& alternatives,
                                  const std::vector<const Plan*>& plans, const TensorMap& inputs,
                                  const PlanSelectionOptions& options) {
  if (plans.empty()) internal_error("select_fastest_plan: no plans");
  const auto start = Clock::now();
  PlanSelection out;
  std::int64_t bytes = 0;  // the largest arena: the candidates share one (below)
  for (const Plan* p : plans) {
    out.trials.push_back({p->kind, p->total_us / 1e3, {}, 0, 0});
    bytes = std::max(bytes, p->arena_bytes);
  }
  // Originals and one packed copy, shared (a packing that holds the weights drops most
  // originals: an upper bound then).
  bytes += 2 * plans.front()->weight_bytes;
  out.interleaved = plans.size() == 1 || bytes <= options.interleave_bytes;
  std::vector<std::unique_ptr<PlanExecutor>> executors(plans.size());
  // The candidates pack each weight once between them; the fastest executor, returned,
  // keeps the copies it uses.
  PackedWeights own_packing;
  PlanExecutorOptions shared;
  shared.packing = options.packing ? options.packing : &own_packing;
  // They run in turns: one arena and pools, of the largest one's size, serve them all.
  shared.memory = std::make_shared<SharedExecutorMemory>();
  if (out.interleaved) {
    executors.clear();
    for (const Plan* p : plans) {
      executors.push_back(std::make_unique<PlanExecutor>(graph, *p, alternatives, shared));
      executors.back()->execute(inputs);  // warm-up: page faults, oneDNN JIT
    }
    double spent_s = 0;
    while (more_rounds(out.rounds, spent_s, options)) {
      for (std::size_t i = 0; i < plans.size(); ++i) {
        const std::size_t k = (i + static_cast<std::size_t>(out.rounds)) % plans.size();
        const double ms = run_ms(*executors[k], inputs);
        out.trials[k].times_ms.push_back(ms);
        spent_s += ms / 1e3;
      }
      ++out.rounds;
    }
  } else {
    PlanSelectionOptions each = options;
    each.budget_seconds = options.budget_seconds / static_cast<double>(plans.size());
    std::size_t best = 0;  // the fastest so far keeps its executor (two alive at most)
    for (std::size_t k = 0; k < plans.size(); ++k) {
      auto executor = std::make_unique<PlanExecutor>(graph, *plans[k], alternatives, shared);
      executor->execute(inputs);
      double spent_s = 0;
      int rounds = 0;
      while (more_rounds(rounds, spent_s, each)) {
        const double ms = run_ms(*executor, inputs);
        out.trials[k].times_ms.push_back(ms);
        spent_s += ms / 1e3;
        ++rounds;
      }
      out.rounds = std::max(out.rounds, rounds);
      if (k == 0 || median(out.trials[k].times_ms) < median(out.trials[best].times_ms)) {
        executors[best].reset();
        executors[k] = std::move(executor);
        best = k;
      }
    }
  }
  for (std::size_t k = 0; k < out.trials.size(); ++k) {
    PlanTrial& t = out.trials[k];
    t.median_ms = median(t.times_ms);
    t.cv = coefficient_of_variation(t.times_ms);
    if (t.median_ms < out.trials[out.fastest].median_ms) out.fastest = k;
  }
  out.fastest_executor = std::move(executors[out.fastest]);
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace orchid
