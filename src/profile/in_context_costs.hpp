// Kernel costs taken inside whole-plan runs, and the orchestration that settles on them.
//
// A kernel's cost from a device model, or from timing it alone (kernel_timer.hpp), misses
// what its place in the model does to it: inside the model its neighbours have just
// written its inputs, small models' weights stay cached from one inference to the next,
// layouts are those the whole plan chose, and a one-kernel run's fixed cost is absent.
// Timed alone, SqueezeNet's kernels summed to 1.7x the time its plans took. So on this
// CPU:
//
//   1. orchestrate with the costs as they are;
//   2. run the optimal plan (and, the first time, greedy fusion and the operator-level
//      plan) whole, on random inputs, timing every kernel (PlanExecutor::execute_timed);
//      each kernel's median becomes its cost (InContextCostModel::record, kept in the
//      in-context database);
//   3. orchestrate again; stop when every kernel of the optimal plan was timed in context
//      (its predicted time is then the sum of its kernels' in-context medians). After
//      `max_rounds` rounds (or `max_seconds`), orchestrate once more over the kernels timed
//      in context (the others priced out): a prediction that rests on guesses is not kept
//      over a measured one. That stop is recorded, so a later run with the same databases
//      stops at the same optimum and gives the same plan.
//
// Kernels never timed in context keep their base cost (the analytic model's, or the time
// alone), scaled by how in-context times compare with the base costs over this model's
// kernels that have both (ratio of sums, apart for kernels with a convolution or matmul
// and for memory-bound ones), so the BLP compares like with like. Deterministic given the
// databases: a second run finds every time stored, times nothing and gives the same plan.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "cost/cost_model.hpp"
#include "orchestrate/orchestrator.hpp"
#include "profile/profile_db.hpp"
#include "runtime/packed_weights.hpp"

namespace orchid {

// Bump when the way kernels are timed in context changes so much that stored times
// should be taken again (or the executor's way of running a kernel does: 2, as
// kKernelTimerVersion 5; 3, as its 6; 4, as its 7; 5, as its 8; 6, as its 9; 7, as its 10;
// 8, as its 11).
constexpr int kInContextVersion = 8;

struct InContextStats {
  std::size_t kernels = 0;     // distinct kernels of the last prepare()
  std::size_t in_context = 0;  // of those, costed by an in-context time
  // Factors on the other kernels' base costs (sum of in-context times over sum of base
  // costs, over the kernels that have both; 1 without enough of them), for kernels with a
  // linear primitive and for the others, and how many kernels each rests on.
  double scale_linear = 1;
  double scale_other = 1;
  std::size_t samples_linear = 0;
  std::size_t samples_other = 0;
  std::size_t wide_spread = 0;  // recorded with p90/p10 above the limit (after re-timing)
};

class InContextCostModel final : public CostModel {
 public:
  // `base` costs what was not timed in context and must outlive this. `db_path`: the
  // in-context database ("" keeps the times in memory only); an orchid::Error naming it
  // when it is corrupt.
  InContextCostModel(const CostModel& base, std::string device, const std::string& db_path);
  ~InContextCostModel() override;  // saves times not yet saved (a warning if it cannot)

  double latency_us(const KernelView& kernel) const override;
  std::string describe() const override;
  void prepare(const std::vector<KernelView>& kernels) const override;

  // The kernel's median over `reps` whole-plan runs, with their p10/p90 (stored with the
  // spread; the caller re-times wide ones). Costs asked for afterwards use it.
  void record(const KernelView& kernel, double median_us, double p10_us, double p90_us,
              int reps) const;
  bool timed_in_context(const KernelView& kernel) const;
  // Writes the database now (atomically); nothing without a path.
  void save() const;
  // While on, a kernel without an in-context time costs a penalty above any plan's time,
  // so the BLP covers the model with timed kernels wherever it can.
  void prefer_timed_kernels(bool on) const;
  // Whether an earlier run stopped refining at the optimum with this key (round limit),
  // and recording that it did (kept in the database, so later runs stop there too).
  bool given_up(std::uint64_t plan_key) const;
  void give_up(std::uint64_t plan_key, double predicted_us, int rounds) const;

  const InContextStats& stats() const { return stats_; }
  const CostModel& base() const { return base_; }
  const std::string& device() const { return device_; }
  const std::string& path() const { return path_; }

 private:
  double context_us(std::uint64_t signature) const;
  double cost(std::uint64_t signature, const KernelView& kernel) const;

  const CostModel& base_;
  std::string device_;
  std::string path_;
  mutable ProfileDb db_;
  mutable std::unordered_map<std::uint64_t, double> cache_;
  mutable InContextStats stats_;
  mutable bool timed_only_ = false;
};

struct InContextOptions {
  int max_rounds = 8;             // orchestrations that may time plans (then one last one)
  double max_seconds = 60;        // no new round once this much time has passed
  int min_runs = 5;               // timed runs of each plan, at least ...
  int max_runs = 30;              // ... and at most
  double seconds_per_plan = 0.3;  // stop once this much time was spent in timed runs
  int wide_retries = 2;           // plan runs again while kernels' times spread too wide (p90/p10
                                  // above ProfileEntry::kMaxSpread)
  std::uint64_t seed = 0;         // random inputs (eval/random_inputs.hpp)
  bool progress = false;          // a line on stderr per round
  // Shared by the executors that time plans; one that holds the weights of the fission
  // graph (packed_weights.hpp) drops the originals they read only packed. The caller
  // calls its hold_weights_of() again where it keeps the orchestration returned.
  PackedWeights* packing = nullptr;
};

struct InContextReport {
  int rounds = 0;  // orchestrations that found kernels to time (plans run)
  int plans_timed = 0;
  std::size_t kernels_recorded = 0;  // distinct kernels given an in-context time
  bool settled = false;              // the optimal plan's kernels all have in-context times
  // Not settled at the limit (or at an optimum an earlier run stopped at): the plans
  // are those of an orchestration over the kernels timed in context (prefer_timed_kernels),
  // and the unverified optimum's predicted time they replaced.
  bool timed_only = false;
  bool stopped_earlier = false;  // an earlier run stopped at this optimum (recorded)
  double unverified_optimum_us = 0;
  std::string error;     // a plan could not be run whole (why): the rounds stopped there
  double seconds = 0;    // wall time, orchestrations included
  InContextStats costs;  // as the last orchestration saw them
};

// Orchestrates `model` as orchestrate() does, refining `costs` as above; returns the last
// orchestration (its plans costed by the refined times).
Orchestration orchestrate_in_context(const Graph& model, const InContextCostModel& costs,
                                     const OrchestrateOptions& options,
                                     const InContextOptions& in_context = {},
                                     InContextReport* report = nullptr);

// The same from a fission done before (fission_options(options)), which the
// orchestrations take over: the caller may drop the model's weights once it exists.
Orchestration orchestrate_in_context(FissionResult primitives, const InContextCostModel& costs,
                                     const OrchestrateOptions& options,
                                     const InContextOptions& in_context = {},
                                     InContextReport* report = nullptr);

// One line for the CLI: counts, rounds, seconds, the scales on the rest.
std::string describe_in_context(const InContextReport& report);

// The in-context database: context-cpu-<isa>-t<threads>.json (this CPU's oneDNN ISA and
// OpenMP thread count: in-context times depend on both) in the folder of `profile_db`, or
// of the default profile database when it is ""; "" (times kept in memory) when there is
// no default place (neither XDG_CACHE_HOME nor HOME).
std::string in_context_db_path(const std::string& profile_db);

}  // namespace orchid
