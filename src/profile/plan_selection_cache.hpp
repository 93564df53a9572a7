// The plan selection's choice, remembered between runs: timing the candidate plans takes
// seconds, and its answer depends only on the model, the candidates, the machine's ISA
// and the thread count. The cache lives beside the profile database (one JSON file per
// device); an entry is reused only when every part of its key matches, else it is timed
// again and replaced.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "orchestrate/plan.hpp"
#include "profile/plan_selection.hpp"

namespace orchid {

struct PlanSelectionKey {
  std::string model;       // content hash of the model file and its input shapes
  std::string candidates;  // hash of the candidate plans (kinds and kernels)
  std::string isa;         // oneDNN's effective ISA
  int threads = 0;
  std::string settings;  // orchid version, cost model, selection budget

  bool operator==(const PlanSelectionKey&) const = default;
};

struct CachedPlanChoice {
  std::string chosen;             // the kind of the plan kept
  std::vector<PlanTrial> trials;  // as timed then (times_ms left empty)
};

// FNV-1a over the file's bytes (streamed) plus the given shape description; a path
// that is not a regular file hashes by its name.
std::string model_content_hash(const std::string& model_path, const std::string& shapes);
std::string candidates_hash(const std::vector<const Plan*>& candidates);

// Default file: plan-choices-<device>.json in the profile database's folder.
std::string default_plan_choice_path(const std::string& device);

// The cached choice for `key` in `path`, if any (a missing, unreadable or foreign file
// is an empty cache: it is only a shortcut).
std::optional<CachedPlanChoice> find_plan_choice(const std::string& path,
                                                 const PlanSelectionKey& key);
// Records the choice (atomic write; other models' entries kept). Failing to write is
// not an error for the run: returns false.
bool store_plan_choice(const std::string& path, const PlanSelectionKey& key,
                       const PlanSelection& selection);

// The default plan choice of `orchid run` and orchid.InferenceSession: the candidates
// timed end to end (select_fastest_plan), or the choice cached for the same key reused.
struct PlanChoiceOptions {
  double budget_seconds = 2;         // the candidates' timed runs together
  int k_best = 3;                    // how many ranked plans the orchestration kept (cache key)
  std::string costs = "analytic";    // the cost model the plans were found with (cache key)
  bool reselect = false;             // time the candidates even when a choice is cached
  PackedWeights* packing = nullptr;  // PlanSelectionOptions::packing
};

struct PlanChoice {
  const Plan* plan = nullptr;              // one of the candidates
  std::string cache;                       // the cache file consulted ("" when none)
  std::optional<CachedPlanChoice> reused;  // set when a cached choice was taken
  PlanSelection selection;                 // when timed now: trials and the warm executor
  bool stored = false;                     // the new choice was written to `cache`
};

// `model_path` and `model_graph` (its input shapes) identify the model for the cache;
// `fission` is what the candidates index into; `feed` the inputs to time with.
PlanChoice choose_fastest_plan(const std::string& model_path, const Graph& model_graph,
                               const FissionResult& fission,
                               const std::vector<const Plan*>& candidates, const TensorMap& feed,
                               const PlanChoiceOptions& options);

}  // namespace orchid
