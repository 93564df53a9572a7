#include "profile/in_context_costs.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cost/kernel_signature.hpp"
#include "eval/random_inputs.hpp"
#include "orchestrate/candidates.hpp"
#include "runtime/plan_executor.hpp"
#include "util/statistics.hpp"

namespace orchid {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Whether every kernel of the plan has an in-context time.
bool verified(const Plan& plan, const PrimitiveGraphIndex& index, const MeasuredCostModel& costs) {
  return std::all_of(plan.kernels.begin(), plan.kernels.end(),
                     [&](const auto& k) { return costs.timed_in_context(index.view(k.nodes)); });
}

// The plans of `o` worth running whole: the optimum always, the baselines the first time
// (so that their predictions rest on in-context times too); those whose kernels all have
// in-context times are left out.
std::vector<const Plan*> plans_to_time(const Orchestration& o, const PrimitiveGraphIndex& index,
                                       const MeasuredCostModel& costs, bool first_round) {
  std::vector<const Plan*> plans = {&o.optimal};
  if (first_round) {
    plans.push_back(&o.greedy);
    plans.push_back(&o.operator_level);
  }
  std::vector<const Plan*> out;
  for (const Plan* p : plans) {
    if (!verified(*p, index, costs)) out.push_back(p);
  }
  return out;
}

struct KernelRuns {
  double median = 0, p10 = 0, p90 = 0;
  int reps = 0;
  double spread() const { return p90 / p10; }
};

// Runs `plan` whole until the options' budget, then records the median of each kernel
// that has no in-context time yet; returns how many it recorded. A kernel whose runs
// spread wider than the database accepts is timed again (the whole plan, twice as long,
// up to twice), keeping its tightest attempt.
std::size_t time_plan(const Orchestration& o, const Plan& plan, const PrimitiveGraphIndex& index,
                      const TensorMap& inputs, const MeasuredCostModel& costs,
                      const InContextOptions& options) {
  std::vector<KernelView> views;
  std::vector<std::size_t> wanted;  // plan kernels without an in-context time
  for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
    views.push_back(index.view(plan.kernels[k].nodes));
    if (!costs.timed_in_context(views.back())) wanted.push_back(k);
  }
  if (wanted.empty()) return 0;
  PlanExecutor executor(o.fission.graph, plan, o.fission.alternatives);
  executor.execute(inputs);  // warm-up: page faults, oneDNN JIT
  const double max_spread = costs.database().max_spread();
  std::vector<KernelRuns> best(plan.kernels.size());
  double budget_s = options.seconds_per_plan;
  for (int attempt = 0; attempt <= options.noisy_retries; ++attempt, budget_s *= 2) {
    std::vector<std::vector<double>> us(plan.kernels.size());
    double spent_s = 0;
    for (int run = 0; run < options.max_runs && (run < options.min_runs || spent_s < budget_s);
         ++run) {
      const auto start = Clock::now();
      const std::vector<double> each = executor.execute_timed(inputs);
      spent_s += seconds_since(start);
      for (std::size_t k = 0; k < each.size(); ++k) us[k].push_back(each[k]);
    }
    bool noisy = false;
    for (std::size_t k : wanted) {
      std::sort(us[k].begin(), us[k].end());
      KernelRuns now{median(us[k]), percentile_of_sorted(us[k], 0.1),
                     percentile_of_sorted(us[k], 0.9), static_cast<int>(us[k].size())};
      if (attempt == 0 || now.spread() < best[k].spread()) best[k] = now;
      noisy = noisy || !(best[k].p90 <= max_spread * best[k].p10);
    }
    if (!noisy) break;
  }
  // Kernels of one signature (the same fused ops on the same shapes, twice in a model)
  // share one cost: the mean of their medians, so that the plan's sum stays right.
  std::map<std::uint64_t, std::vector<std::size_t>> by_signature;
  for (std::size_t k : wanted) {
    by_signature[kernel_signature(views[k], costs.device().name)].push_back(k);
  }
  for (const auto& [signature, ks] : by_signature) {
    KernelRuns mean;
    for (std::size_t k : ks) {
      mean.median += best[k].median / static_cast<double>(ks.size());
      mean.p10 += best[k].p10 / static_cast<double>(ks.size());
      mean.p90 += best[k].p90 / static_cast<double>(ks.size());
      mean.reps += best[k].reps;
    }
    costs.record_in_context(views[ks.front()], mean.median, mean.p10, mean.p90, mean.reps);
  }
  return by_signature.size();
}

// The round limit came before the optimum's kernels were all timed: its predicted time
// rests partly on scaled isolated times. Keep, as the optimal plan, the cheapest plan whose
// kernels all were timed in context instead (an earlier round's optimum, greedy fusion or
// the operator-level plan), re-costed with the final costs.
void keep_best_verified(Orchestration& o, std::vector<Plan>& earlier_optima,
                        const PrimitiveGraphIndex& index, const MeasuredCostModel& costs,
                        InContextReport& r) {
  const Plan* best = nullptr;
  for (Plan& p : earlier_optima) {
    if (!verified(p, index, costs)) continue;
    p.total_us = 0;
    for (auto& k : p.kernels) p.total_us += k.cost_us = costs.latency_us(index.view(k.nodes));
    if (!best || p.total_us < best->total_us) best = &p;
  }
  for (const Plan* p : {&o.greedy, &o.operator_level, &o.per_primitive}) {
    if (verified(*p, index, costs) && (!best || p->total_us < best->total_us)) best = p;
  }
  if (!best) return;
  r.kept_instead = best->kind == "optimal" ? "an earlier round's optimum" : best->kind;
  r.unverified_optimum_us = o.optimal.total_us;
  Plan kept = *best;
  kept.kind = "optimal";
  o.optimal = std::move(kept);
}

}  // namespace

Orchestration orchestrate_in_context(const Graph& model, const MeasuredCostModel& costs,
                                     const OrchestrateOptions& options,
                                     const InContextOptions& in_context, InContextReport* report) {
  InContextReport local;
  InContextReport& r = report ? *report : local;
  r = {};
  const TensorMap inputs = make_random_inputs(model, in_context.seed);
  std::vector<Plan> earlier_optima;  // node indices stay valid: fission is deterministic
  for (int round = 0;; ++round) {
    Orchestration o = orchestrate(model, costs, options);
    std::set<std::string> exported;
    for (const auto& [alt, target] : o.fission.alternatives) exported.insert(alt);
    const PrimitiveGraphIndex index(o.fission.graph, exported);
    const std::vector<const Plan*> plans = plans_to_time(o, index, costs, round == 0);
    r.settled = plans.empty() || plans.front() != &o.optimal;
    if (r.settled) return o;
    if (round >= in_context.max_rounds) {
      keep_best_verified(o, earlier_optima, index, costs, r);
      return o;
    }
    const auto start = Clock::now();
    for (const Plan* p : plans) {
      r.kernels_recorded += time_plan(o, *p, index, inputs, costs, in_context);
      ++r.plans_timed;
    }
    r.seconds += seconds_since(start);
    ++r.rounds;
    earlier_optima.push_back(o.optimal);
    costs.save();
  }
}

std::string describe_in_context(const InContextReport& r, const MeasuredCostStats& s) {
  if (r.rounds == 0 && s.in_context == 0) return "no kernel timed inside a whole plan";
  return fmt::format(
      "{} of {} kernels costed by their time inside whole-plan runs ({} timed now: {} plan "
      "run(s) in {} round(s), {:.2f} s); the optimal plan's kernels {}; the rest's isolated "
      "times scaled x{:.2f} (with a convolution or matmul, from {} kernels) and x{:.2f} "
      "(memory-bound, from {}){}",
      s.in_context, s.kernels, r.kernels_recorded, r.plans_timed, r.rounds, r.seconds,
      r.settled ? "all were"
      : r.kept_instead.empty()
          ? "were not all (round limit)"
          : fmt::format("were not all after {} rounds (its prediction {:.1f} us rests partly on "
                        "scaled isolated times): kept {} instead, the cheapest plan whose "
                        "kernels all were",
                        r.rounds, r.unverified_optimum_us, r.kept_instead),
      s.context_scale_linear, s.context_scale_samples_linear, s.context_scale_other,
      s.context_scale_samples_other,
      s.noisy_in_context ? fmt::format("; {} kept with p90/p10 above {} after re-timing",
                                       s.noisy_in_context, ProfileEntry::kMaxSpread)
                         : "");
}

}  // namespace orchid
