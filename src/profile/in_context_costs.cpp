#include "profile/in_context_costs.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_set>

#include <fmt/format.h>

#include "cost/analytic_cost_model.hpp"
#include "cost/kernel_signature.hpp"
#include "eval/random_inputs.hpp"
#include "orchestrate/candidates.hpp"
#include "profile/cpu_environment.hpp"
#include "runtime/plan_executor.hpp"
#include "util/error.hpp"
#include "util/random.hpp"
#include "util/statistics.hpp"

namespace orchid {

namespace {

using Clock = std::chrono::steady_clock;
// Kernels with both times that a scale rests on (fewer: the pooled scale, or none).
constexpr std::size_t kMinScaleSamples = 3;
// A plan is run again for its wide-spread kernels when they take this share of its time.
constexpr double kWideShare = 0.1;

// Runs spread too wide to trust at once (the profile database's limit for times alone).
bool wide(double p10_us, double p90_us) {
  return !(p90_us <= ProfileEntry::kMaxSpread * p10_us);
}
// Added to the cost of a kernel not timed in context while prefer_timed_kernels is on: more
// than any plan takes, so the BLP uses such a kernel only where nothing else covers.
constexpr double kUntimedPenaltyUs = 1e6;
// The database entry (keyed by plan_key) of an optimum the round limit left unverified.
constexpr const char* kGivenUp = "optimum left with kernels not timed in context (round limit)";

// Kernels with a convolution or matmul: their in-context times differ from their base
// costs in other ways (weights, oneDNN's blocking) than memory-bound kernels' do.
bool has_linear_primitive(const KernelView& kernel) {
  GemmShape shape;
  for (std::size_t n : kernel.nodes) {
    if (linear_gemm_shape(*kernel.graph, kernel.graph->nodes[n], shape)) return true;
  }
  return false;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Whether every kernel of the plan has an in-context time.
bool verified(const Plan& plan, const PrimitiveGraphIndex& index, const InContextCostModel& costs) {
  return std::all_of(plan.kernels.begin(), plan.kernels.end(),
                     [&](const auto& k) { return costs.timed_in_context(index.view(k.nodes)); });
}

// The plans of `o` worth running whole: the optimum always, the baselines the first time
// (so that their predictions rest on in-context times too); those whose kernels all have
// in-context times are left out.
std::vector<const Plan*> plans_to_time(const Orchestration& o, const PrimitiveGraphIndex& index,
                                       const InContextCostModel& costs, bool first_round) {
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
// that has no in-context time yet; returns how many it recorded. While kernels whose runs
// spread wider than ProfileEntry::kMaxSpread take a tenth of the plan's time or more, the plan
// runs again (twice as long, up to options.wide_retries times); each kernel keeps its
// tightest attempt.
std::size_t time_plan(Orchestration& o, const Plan& plan, const PrimitiveGraphIndex& index,
                      const TensorMap& inputs, const InContextCostModel& costs,
                      const InContextOptions& options) {
  std::vector<KernelView> views;
  std::vector<std::size_t> wanted;  // plan kernels without an in-context time
  for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
    views.push_back(index.view(plan.kernels[k].nodes));
    if (!costs.timed_in_context(views.back())) wanted.push_back(k);
  }
  if (wanted.empty()) return 0;
  PlanExecutorOptions shared;
  if (options.packing) {
    options.packing->hold_weights_of(&o.fission.graph);  // where the graph is now
    shared.packing = options.packing;
  }
  PlanExecutor executor(o.fission.graph, plan, o.fission.alternatives, shared);
  executor.execute(inputs);  // warm-up: page faults, oneDNN JIT
  std::vector<KernelRuns> best(plan.kernels.size());
  double budget_s = options.seconds_per_plan;
  for (int attempt = 0; attempt <= options.wide_retries; ++attempt, budget_s *= 2) {
    std::vector<std::vector<double>> us(plan.kernels.size());
    double spent_s = 0;
    for (int run = 0; run < options.max_runs && (run < options.min_runs || spent_s < budget_s);
         ++run) {
      const auto start = Clock::now();
      const std::vector<double> each = executor.execute_timed(inputs);
      spent_s += seconds_since(start);
      for (std::size_t k = 0; k < each.size(); ++k) us[k].push_back(each[k]);
    }
    // Timed again only when the wide kernels make up a tenth of the plan's time or more:
    // tiny kernels often spread wide and hardly matter.
    double wide_us = 0, total_us = 0;
    for (std::size_t k = 0; k < us.size(); ++k) total_us += median(us[k]);
    for (std::size_t k : wanted) {
      std::sort(us[k].begin(), us[k].end());
      KernelRuns now{median(us[k]), percentile_of_sorted(us[k], 0.1),
                     percentile_of_sorted(us[k], 0.9), static_cast<int>(us[k].size())};
      if (attempt == 0 || now.spread() < best[k].spread()) best[k] = now;
      if (wide(best[k].p10, best[k].p90)) wide_us += best[k].median;
    }
    if (wide_us < kWideShare * total_us) break;
  }
  // Kernels of one signature (the same fused ops on the same shapes, twice in a model)
  // share one cost: the mean of their medians, so that the plan's sum stays right.
  std::map<std::uint64_t, std::vector<std::size_t>> by_signature;
  for (std::size_t k : wanted) {
    by_signature[kernel_signature(views[k], costs.device())].push_back(k);
  }
  for (const auto& [signature, ks] : by_signature) {
    KernelRuns mean;
    for (std::size_t k : ks) {
      mean.median += best[k].median / static_cast<double>(ks.size());
      mean.p10 += best[k].p10 / static_cast<double>(ks.size());
      mean.p90 += best[k].p90 / static_cast<double>(ks.size());
      mean.reps += best[k].reps;
    }
    costs.record(views[ks.front()], mean.median, mean.p10, mean.p90, mean.reps);
  }
  return by_signature.size();
}

// What identifies a plan's kernel set: its kernels' signatures, combined in plan order.
std::uint64_t plan_key(const Plan& plan, const PrimitiveGraphIndex& index,
                       const std::string& device) {
  std::string text = "in-context unsettled optimum";
  for (const auto& k : plan.kernels) {
    text += fmt::format(" {:016x}", kernel_signature(index.view(k.nodes), device));
  }
  return fnv1a64(text);
}

}  // namespace

InContextCostModel::InContextCostModel(const CostModel& base, std::string device,
                                       const std::string& db_path)
    : base_(base),
      device_(std::move(device)),
      path_(db_path),
      db_(db_path.empty() ? ProfileDb("", device_) : ProfileDb::open(db_path, device_)) {}

InContextCostModel::~InContextCostModel() {
  if (path_.empty() || !db_.dirty()) return;
  try {
    db_.save();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "orchid: warning: in-context times not saved: %s\n", e.what());
  }
}

void InContextCostModel::save() const {
  if (!path_.empty() && db_.dirty()) db_.save();
}

std::string InContextCostModel::describe() const {
  return fmt::format("{}; kernels timed inside whole-plan runs override it ({})", base_.describe(),
                     path_.empty() ? "kept in memory" : path_);
}

double InContextCostModel::context_us(std::uint64_t signature) const {
  const ProfileEntry* e = db_.find(signature);
  return e && e->timer_version == kInContextVersion ? e->context_us : 0;
}

bool InContextCostModel::timed_in_context(const KernelView& kernel) const {
  return context_us(kernel_signature(kernel, device_)) > 0;
}

double InContextCostModel::cost(std::uint64_t signature, const KernelView& kernel) const {
  if (const double us = context_us(signature); us > 0) return us;
  const double scaled = base_.latency_us(kernel) *
                        (has_linear_primitive(kernel) ? stats_.scale_linear : stats_.scale_other);
  return timed_only_ ? scaled + kUntimedPenaltyUs : scaled;
}

void InContextCostModel::prefer_timed_kernels(bool on) const {
  timed_only_ = on;
  cache_.clear();
}

bool InContextCostModel::given_up(std::uint64_t plan_key) const {
  const ProfileEntry* e = db_.find(plan_key);
  return e && e->timer_version == kInContextVersion && e->kernel == kGivenUp;
}

void InContextCostModel::give_up(std::uint64_t plan_key, double predicted_us, int rounds) const {
  ProfileEntry e;
  e.timer_version = kInContextVersion;
  e.kernel = kGivenUp;
  e.context_us = std::max(predicted_us, 1e-3);
  e.context_reps = std::max(rounds, 1);
  db_.put(plan_key, std::move(e));
}

double InContextCostModel::latency_us(const KernelView& kernel) const {
  const std::uint64_t signature = kernel_signature(kernel, device_);
  auto it = cache_.find(signature);
  if (it != cache_.end()) return it->second;
  return cache_.emplace(signature, cost(signature, kernel)).first->second;
}

void InContextCostModel::prepare(const std::vector<KernelView>& kernels) const {
  base_.prepare(kernels);
  // Distinct kernels, first view of each (deterministic order).
  std::vector<std::pair<std::uint64_t, const KernelView*>> distinct;
  std::unordered_set<std::uint64_t> seen;
  for (const auto& k : kernels) {
    const std::uint64_t s = kernel_signature(k, device_);
    if (seen.insert(s).second) distinct.emplace_back(s, &k);
  }
  // Ratios of sums, per class and pooled: weighted by time, so that the kernels that
  // make up a plan's time set the scale, not the many tiny ones whose in-context time is
  // mostly the executor's fixed cost per kernel.
  double in_context_sum[2] = {0, 0}, base_sum[2] = {0, 0};
  std::size_t count[2] = {0, 0};
  for (const auto& [signature, view] : distinct) {
    const double us = context_us(signature);
    if (!(us > 0)) continue;
    const int linear = has_linear_primitive(*view) ? 1 : 0;
    in_context_sum[linear] += us;
    base_sum[linear] += base_.latency_us(*view);
    ++count[linear];
  }
  const std::size_t pooled = count[0] + count[1];
  const auto scale = [&](int c) {
    if (count[c] >= kMinScaleSamples && base_sum[c] > 0) return in_context_sum[c] / base_sum[c];
    const double all = base_sum[0] + base_sum[1];
    if (pooled >= kMinScaleSamples && all > 0) return (in_context_sum[0] + in_context_sum[1]) / all;
    return 1.0;
  };
  stats_.scale_other = scale(0);
  stats_.scale_linear = scale(1);
  stats_.samples_other = count[0];
  stats_.samples_linear = count[1];
  stats_.kernels = distinct.size();
  stats_.in_context = pooled;
  cache_.clear();
  for (const auto& [signature, view] : distinct) cache_.emplace(signature, cost(signature, *view));
}

void InContextCostModel::record(const KernelView& kernel, double median_us, double p10_us,
                                double p90_us, int reps) const {
  ProfileEntry e;
  e.timer_version = kInContextVersion;
  e.kernel = kernel_summary(kernel);
  e.context_us = std::max(median_us, 1e-3);
  e.context_spread = p10_us > 0 ? p90_us / p10_us : 0;
  e.context_reps = reps;
  if (wide(p10_us, p90_us)) ++stats_.wide_spread;
  db_.put(kernel_signature(kernel, device_), std::move(e));
  cache_.clear();  // the next prepare() settles every cost again (the scales too)
}

std::string in_context_db_path(const std::string& profile_db) {
  std::string db = profile_db;
  if (db.empty()) {
    try {
      db = default_profile_db_path("cpu");
    } catch (const Error&) {
      return "";
    }
  }
  const std::string file =
      fmt::format("context-cpu-{}-t{}.json", file_name_part(effective_cpu_isa()), cpu_threads());
  return (std::filesystem::path(db).parent_path() / file).string();
}

Orchestration orchestrate_in_context(const Graph& model, const InContextCostModel& costs,
                                     const OrchestrateOptions& options,
                                     const InContextOptions& in_context, InContextReport* report) {
  return orchestrate_in_context(fission(model, fission_options(options)), costs, options,
                                in_context, report);
}

Orchestration orchestrate_in_context(FissionResult primitives, const InContextCostModel& costs,
                                     const OrchestrateOptions& options,
                                     const InContextOptions& in_context, InContextReport* report) {
  const auto start = Clock::now();
  InContextReport local;
  InContextReport& r = report ? *report : local;
  r = {};
  const auto finish = [&](Orchestration o) {
    r.costs = costs.stats();
    r.seconds = seconds_since(start);
    return o;
  };
  const TensorMap inputs = make_random_inputs(primitives.graph, in_context.seed);
  // The rounds need only the optimum; the k best plans are ranked once, at the end, under
  // the final costs (the same optimum: the costs do not change in between). Fission is
  // done once: each orchestration takes over the primitive graph of the one before.
  OrchestrateOptions optimum_only = options;
  optimum_only.k_best = 1;
  Orchestration o = orchestrate(std::move(primitives), costs, optimum_only);
  for (int round = 0;; ++round) {
    if (round > 0) o = orchestrate(std::move(o.fission), costs, optimum_only);
    std::set<std::string> exported;
    for (const auto& [alt, target] : o.fission.alternatives) exported.insert(alt);
    const PrimitiveGraphIndex index(o.fission.graph, exported);
    const std::vector<const Plan*> plans = plans_to_time(o, index, costs, round == 0);
    r.settled = plans.empty() || plans.front() != &o.optimal;
    if (r.settled) {
      return finish(options.k_best <= 1 ? std::move(o)
                                        : orchestrate(std::move(o.fission), costs, options));
    }
    // The limits, or an earlier run that stopped at this very optimum (so that the same
    // databases give the same plan): orchestrate over the kernels timed in context.
    const std::uint64_t key = plan_key(o.optimal, index, costs.device());
    const bool limit =
        round >= in_context.max_rounds || seconds_since(start) >= in_context.max_seconds;
    if (limit || costs.given_up(key)) {
      r.stopped_earlier = costs.given_up(key);
      if (!r.stopped_earlier) costs.give_up(key, o.optimal.total_us, r.rounds);
      r.unverified_optimum_us = o.optimal.total_us;
      costs.prefer_timed_kernels(true);
      Orchestration timed = orchestrate(std::move(o.fission), costs, options);
      costs.prefer_timed_kernels(false);
      costs.save();
      const PrimitiveGraphIndex timed_index(timed.fission.graph, exported);
      if (!verified(timed.optimal, timed_index, costs)) {
        // The same graph, node for node (orchestrating again keeps the order).
        o.fission = std::move(timed.fission);
        return finish(std::move(o));
      }
      r.timed_only = true;
      // Ranked plans that had to use untimed kernels carry the penalty: not candidates.
      std::erase_if(timed.ranked, [](const Plan& p) { return p.total_us >= kUntimedPenaltyUs; });
      return finish(std::move(timed));
    }
    if (in_context.progress) {
      std::fprintf(stderr, "in context   round %d: timing %zu plan(s) whole (%.1f s so far)\n",
                   round + 1, plans.size(), seconds_since(start));
    }
    try {
      for (const Plan* p : plans) {
        r.kernels_recorded += time_plan(o, *p, index, inputs, costs, in_context);
        ++r.plans_timed;
      }
    } catch (const std::exception& e) {
      // The plans stay costed as they are (what was recorded before counts): timing
      // them whole is a refinement, not a condition for a plan.
      r.error = e.what();
      return finish(std::move(o));
    }
    ++r.rounds;
    costs.save();
  }
}

std::string describe_in_context(const InContextReport& r) {
  const InContextStats& s = r.costs;
  if (!r.error.empty()) {
    return fmt::format(
        "stopped: a plan could not be run whole ({}); {} of {} kernels had "
        "in-context times",
        r.error, s.in_context, s.kernels);
  }
  if (r.rounds == 0 && s.in_context == 0) return "no kernel timed inside a whole plan";
  std::string optimum = "all were";
  if (r.timed_only) {
    optimum = fmt::format(
        "were not all {} (that optimum, predicted {:.1f} us, rests partly on scaled base "
        "costs): orchestrated again over the kernels timed in context, whose optimum is the "
        "plan",
        r.stopped_earlier ? std::string("where an earlier run stopped refining")
                          : fmt::format("after {} round(s)", r.rounds),
        r.unverified_optimum_us);
  } else if (!r.settled) {
    optimum = "were not all (round or time limit)";
  }
  return fmt::format(
      "{} of {} kernels costed by their time inside whole-plan runs ({} timed now: {} plan "
      "run(s) in {} round(s); {:.2f} s with the orchestrations); the optimal plan's kernels "
      "{}; the other kernels' costs scaled x{:.2f} (with a convolution or matmul, from {} "
      "kernels) and x{:.2f} (memory-bound, from {}){}",
      s.in_context, s.kernels, r.kernels_recorded, r.plans_timed, r.rounds, r.seconds, optimum,
      s.scale_linear, s.samples_linear, s.scale_other, s.samples_other,
      s.wide_spread ? fmt::format("; {} kept with p90/p10 above {} after re-timing", s.wide_spread,
                                  ProfileEntry::kMaxSpread)
                    : "");
}

}  // namespace orchid
