#include "orchestrate/orchestrator.hpp"

#include <algorithm>
#include <chrono>
#include <set>
#include <unordered_map>

#include "orchestrate/baselines.hpp"
#include "orchestrate/k_best.hpp"
#include "orchestrate/regions.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A region's selection within `seconds` (at least CBC's 1 s while time is left). With the
// time spent, a feasible warm start (the greedy plan's kernels) stands as the answer,
// unproven.
SelectionResult solve_selection_within(const SelectionProblem& problem, double seconds) {
  if (seconds <= 0 && !problem.warm_start.empty() &&
      selection_is_feasible(problem, problem.warm_start)) {
    SelectionResult result;
    result.chosen = problem.warm_start;
    std::sort(result.chosen.begin(), result.chosen.end());
    for (int k : result.chosen) result.objective += problem.cost[static_cast<std::size_t>(k)];
    result.best_bound = 0;
    result.gap = result.objective > 0 ? 1.0 : 0.0;
    return result;
  }
  return solve_selection_cbc(problem, std::max(1.0, seconds));
}

// Nodes that no graph output depends on: the alternative subgraphs.
std::set<std::size_t> alternative_node_set(const Graph& g) {
  const auto producers = g.producers();
  std::vector<bool> live(g.nodes.size(), false);
  std::vector<std::string> stack(g.outputs.begin(), g.outputs.end());
  std::set<std::string> seen;
  while (!stack.empty()) {
    const std::string t = stack.back();
    stack.pop_back();
    if (!seen.insert(t).second) continue;
    auto it = producers.find(t);
    if (it == producers.end() || live[it->second]) continue;
    live[it->second] = true;
    for (const auto& in : g.nodes[it->second].inputs) {
      if (!in.empty()) stack.push_back(in);
    }
  }
  std::set<std::size_t> alt;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (!live[i]) alt.insert(i);
  }
  return alt;
}

// Main nodes every plan must compute, whichever alternatives it takes: the ancestors of
// the outputs when tensors with an alternative are treated as given, plus what both
// ways of computing such a tensor share. Each must lie in some chosen kernel — a valid
// inequality that tightens the LP relaxation a lot.
std::vector<bool> mandatory_nodes(const Graph& g,
                                  const std::map<std::string, std::string>& alternatives) {
  const auto producers = g.producers();
  std::set<std::string> has_alternative;
  for (const auto& [alt, target] : alternatives) has_alternative.insert(target);
  auto closure = [&](const std::vector<std::string>& roots, bool stop_at_alternatives) {
    std::vector<bool> in(g.nodes.size(), false);
    std::vector<std::string> stack = roots;
    std::set<std::string> seen;
    bool first = true;
    while (!stack.empty()) {
      const std::string t = stack.back();
      stack.pop_back();
      if (!seen.insert(t).second) continue;
      if (stop_at_alternatives && has_alternative.count(t) && !first) continue;
      first = false;
      auto it = producers.find(t);
      if (it == producers.end() || in[it->second]) continue;
      in[it->second] = true;
      for (const auto& x : g.nodes[it->second].inputs) {
        if (!x.empty()) stack.push_back(x);
      }
    }
    return in;
  };
  std::vector<bool> mandatory(g.nodes.size(), false);
  for (const auto& out : g.outputs) {
    const auto part = closure({out}, true);
    for (std::size_t i = 0; i < part.size(); ++i) mandatory[i] = mandatory[i] || part[i];
  }
  for (const auto& [alt, target] : alternatives) {
    const auto via_main = closure({target}, false);
    const auto via_alt = closure({alt}, false);
    for (std::size_t i = 0; i < via_main.size(); ++i) {
      if (via_main[i] && via_alt[i]) mandatory[i] = true;
    }
  }
  // A tensor with an alternative cuts the closure above; its own producer is optional.
  for (const auto& [alt, target] : alternatives) {
    auto it = producers.find(target);
    if (it != producers.end()) {
      const auto via_alt = closure({alt}, false);
      if (!via_alt[it->second]) mandatory[it->second] = false;
    }
  }
  return mandatory;
}

// A region with more candidates than kWideCandidatesPerPrimitive x the region target
// size (1,536 at the default 48) is cut again where at most kWideCutMaxLive tensors are
// live (split_wide_region): CBC proves BLPs of ~1,000 candidates optimal in a fraction
// of a second, while SSDlite's 16,625-candidate head region took 18 s and its
// 2,607-candidate box decoding (794k nonzeros) 12 s. The cuts cost SSDlite's static part
// 0.33 % of predicted latency (22,149 vs 22,077 us), against 2 s instead of 19 s. A
// larger --region-size asks for larger regions and raises the threshold with it.
constexpr std::size_t kWideCandidatesPerPrimitive = 32;
constexpr int kWideCutMaxLive = 32;

void refine_wide_regions(const Graph& g, const PrimitiveGraphIndex& index,
                         const std::set<std::size_t>& alt_nodes,
                         const std::vector<std::vector<std::size_t>>& keep_together,
                         const CandidateRules& rules, std::size_t target_size, RegionSplit& split,
                         OrchestrationStats& st) {
  const std::size_t wide_candidates =
      kWideCandidatesPerPrimitive * std::min<std::size_t>(target_size, std::size_t{1} << 40);
  std::vector<std::vector<std::size_t>> done;
  std::vector<std::vector<std::size_t>> pending(split.regions.rbegin(), split.regions.rend());
  while (!pending.empty()) {
    std::vector<std::size_t> region = std::move(pending.back());
    pending.pop_back();
    std::vector<std::vector<std::size_t>> parts;
    if (enumerate_candidates(index, region, rules).size() > wide_candidates) {
      parts = split_wide_region(g, region, alt_nodes, keep_together, kWideCutMaxLive);
    }
    if (parts.size() != 2) {
      done.push_back(std::move(region));
      continue;
    }
    ++st.multi_tensor_cuts;
    pending.push_back(std::move(parts[1]));
    pending.push_back(std::move(parts[0]));
  }
  split.regions = std::move(done);
  for (std::size_t r = 0; r < split.regions.size(); ++r) {
    for (std::size_t v : split.regions[r]) split.region_of[v] = static_cast<int>(r);
  }
}

struct RegionProblem {
  std::vector<std::vector<std::size_t>> candidates;
  std::vector<double> costs;
  SelectionProblem problem;
  SelectionResult result;
};

Plan plan_from_partition(const PrimitiveGraphIndex& index,
                         const std::map<std::string, std::string>& alternatives,
                         const Partition& partition, const CostModel& cost_model,
                         const std::string& kind) {
  std::vector<KernelChoice> choices;
  for (const auto& nodes : partition) {
    choices.push_back({nodes, cost_model.latency_us(index.view(nodes))});
  }
  auto plan = build_plan(index, alternatives, choices, kind);
  if (!plan) internal_error("baseline '{}' is not schedulable", kind);
  return *plan;
}

// The k best plans: combinations of each region's ranked selections in order of their
// summed cost (CombinationRanker). A region's next selection is its BLP with a no-good
// cut on every earlier one (sum of its kernels <= size - 1: that selection and its
// supersets, which only add redundant kernels, are excluded). Combinations whose kernels
// cannot be ordered are skipped.
std::vector<Plan> rank_plans(const PrimitiveGraphIndex& index,
                             const std::map<std::string, std::string>& alternatives,
                             const std::vector<RegionProblem>& problems, const Plan& optimal,
                             const OrchestrateOptions& options, OrchestrationStats& st) {
  const auto start = Clock::now();
  std::vector<Plan> ranked{optimal};
  std::vector<SelectionProblem> next_problem;
  std::vector<std::vector<std::vector<int>>> selections(problems.size());
  for (std::size_t r = 0; r < problems.size(); ++r) {
    next_problem.push_back(problems[r].problem);
    selections[r].push_back(problems[r].result.chosen);
  }
  auto cost_of = [&](std::size_t r, std::size_t rank) -> std::optional<double> {
    if (rank == 0) return problems[r].result.objective;
    const double left = options.k_best_time_limit_s - seconds_since(start);
    if (left <= 0) return std::nullopt;
    SelectionProblem& p = next_problem[r];
    p.nogoods.push_back(selections[r].back());
    if (!p.warm_start.empty() && !selection_is_feasible(p, p.warm_start)) p.warm_start.clear();
    try {
      SelectionResult result = solve_selection_cbc(p, std::max(1.0, left));
      selections[r].push_back(result.chosen);
      return result.objective;
    } catch (const Error&) {
      return std::nullopt;  // no other selection (or none found in time)
    }
  };
  CombinationRanker ranker(problems.size(), cost_of);
  ranker.next();  // the optimum itself
  for (int tries = 0;
       ranked.size() < options.k_best && tries < 4 * static_cast<int>(options.k_best); ++tries) {
    const auto combination = ranker.next();
    if (!combination) break;
    std::vector<KernelChoice> choices;
    for (std::size_t r = 0; r < problems.size(); ++r) {
      for (int k : selections[r][combination->first[r]]) {
        choices.push_back({problems[r].candidates[static_cast<std::size_t>(k)],
                           problems[r].problem.cost[static_cast<std::size_t>(k)]});
      }
    }
    auto plan =
        build_plan(index, alternatives, choices, fmt::format("optimal-{}", ranked.size() + 1));
    if (plan) ranked.push_back(std::move(*plan));
  }
  st.k_best_seconds = seconds_since(start);
  return ranked;
}

}  // namespace

FissionOptions fission_options(const OrchestrateOptions& options) {
  FissionOptions o;
  o.softmax_matmul_alternative = options.softmax_matmul_alternative;
  o.int8_linear = options.int8_linear;
  return o;
}

Orchestration orchestrate(const Graph& model, const CostModel& cost_model,
                          const OrchestrateOptions& options) {
  const auto start = Clock::now();
  FissionResult primitives = fission(model, fission_options(options));
  const double fission_seconds = seconds_since(start);
  Orchestration out = orchestrate(std::move(primitives), cost_model, options);
  out.stats.total_seconds += fission_seconds;
  return out;
}

Orchestration orchestrate(FissionResult primitives, const CostModel& cost_model,
                          const OrchestrateOptions& options) {
  const auto start = Clock::now();
  Orchestration out;
  out.device = cost_model.describe();
  out.fission = std::move(primitives);
  Graph& g = out.fission.graph;
  {
    // Primitives that neither an output nor an alternative needs (e.g. the Y_h of a
    // recurrent layer whose Y the next layer reads) are dropped: left in, they joined
    // some region and kept it from being cut (split_wide_region skips regions holding
    // nodes outside the main graph).
    const std::vector<std::string> outputs = g.outputs;
    for (const auto& [alt, target] : out.fission.alternatives) g.outputs.push_back(alt);
    g.remove_dead_nodes();
    g.outputs = outputs;
  }
  g.sort_topologically();
  const auto& alternatives = out.fission.alternatives;

  const std::set<std::size_t> alt_nodes = alternative_node_set(g);
  std::set<std::string> exported;
  for (const auto& [alt, target] : alternatives) exported.insert(alt);
  const PrimitiveGraphIndex index(g, exported);

  OrchestrationStats& st = out.stats;
  st.model_nodes = out.fission.model_nodes;
  st.alternative_primitives = alt_nodes.size();
  st.primitives = g.nodes.size() - alt_nodes.size();

  const Partition op_level = operator_level_partition(g, out.fission.origin, alt_nodes);
  const Partition per_prim = per_primitive_partition(g, alt_nodes);
  const Partition greedy = greedy_fusion_partition(index, alt_nodes, options.rules.max_nodes);

  // Each operator's primitives stay in one region (so its operator-level kernel is a
  // candidate), except for operators larger than a region: an unrolled recurrent layer
  // (hundreds of primitives) kept whole made one region of ~35,000 candidates for a
  // two-layer RNN, minutes of costing and a root LP CBC could not finish. Such an
  // operator is cut like any other primitives; its whole-operator kernel is then not a
  // candidate (it exceeds the kernel size bound anyway).
  std::vector<std::vector<std::size_t>> keep_together;
  for (const auto& group : op_level) {
    if (group.size() <= options.region_target_size) keep_together.push_back(group);
  }
  keep_together.insert(keep_together.end(), greedy.begin(), greedy.end());
  RegionSplit split =
      split_into_regions(g, alt_nodes, alternatives, keep_together, options.region_target_size);
  refine_wide_regions(g, index, alt_nodes, keep_together, options.rules, options.region_target_size,
                      split, st);
  st.regions = split.regions.size();
  st.possible_cuts = split.possible_cuts;

  // Which tensors each region must materialise: read by another region, or outputs.
  const auto producers = g.producers();
  std::vector<std::set<std::string>> required(split.regions.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    for (const auto& t : g.nodes[i].inputs) {
      auto p = producers.find(t);
      if (p == producers.end()) continue;
      const int rp = split.region_of[p->second];
      if (rp != split.region_of[i]) required[static_cast<std::size_t>(rp)].insert(t);
    }
  }
  for (const auto& t : g.outputs) {
    auto p = producers.find(t);
    if (p != producers.end())
      required[static_cast<std::size_t>(split.region_of[p->second])].insert(t);
  }

  const std::vector<bool> mandatory = mandatory_nodes(g, alternatives);

  // Candidates per region (baseline kernels included).
  std::vector<RegionProblem> problems(split.regions.size());
  for (std::size_t r = 0; r < split.regions.size(); ++r) {
    RegionProblem& rp = problems[r];
    const auto t0 = Clock::now();
    rp.candidates = enumerate_candidates(index, split.regions[r], options.rules);
    // Baseline kernels are always candidates, so the optimum can never lose to them.
    std::set<std::vector<std::size_t>> known(rp.candidates.begin(), rp.candidates.end());
    for (const Partition* part : {&greedy, &op_level, &per_prim}) {
      for (const auto& k : *part) {
        const bool inside = std::all_of(k.begin(), k.end(), [&](std::size_t v) {
          return split.region_of[v] == static_cast<int>(r);
        });
        if (!inside) continue;  // an operator cut across regions (see keep_together)
        if (known.insert(k).second) rp.candidates.push_back(k);
      }
    }
    st.enumerate_seconds += seconds_since(t0);
    st.candidates += rp.candidates.size();
    st.largest_region_candidates = std::max(st.largest_region_candidates, rp.candidates.size());
  }

  // Every kernel that will be costed, announced at once (a measuring model times them
  // in one batch), then the baselines and the BLPs.
  auto t0 = Clock::now();
  {
    std::vector<KernelView> all_kernels;
    for (const Partition* part : {&op_level, &per_prim, &greedy}) {
      for (const auto& k : *part) all_kernels.push_back(index.view(k));
    }
    for (const auto& rp : problems) {
      for (const auto& k : rp.candidates) all_kernels.push_back(index.view(k));
    }
    cost_model.prepare(all_kernels);
  }
  out.operator_level =
      plan_from_partition(index, alternatives, op_level, cost_model, "operator-level");
  out.per_primitive =
      plan_from_partition(index, alternatives, per_prim, cost_model, "per-primitive");
  out.greedy = plan_from_partition(index, alternatives, greedy, cost_model, "greedy-fusion");
  st.cost_seconds += seconds_since(t0);

  for (std::size_t r = 0; r < split.regions.size(); ++r) {
    RegionProblem& rp = problems[r];
    std::vector<int> warm;
    t0 = Clock::now();
    std::unordered_map<std::string, std::vector<int>> writers;  // tensor -> candidates
    std::vector<std::vector<std::string>> needs(rp.candidates.size());
    std::map<std::vector<std::size_t>, int> id_of;
    for (std::size_t k = 0; k < rp.candidates.size(); ++k) {
      const KernelView view = index.view(rp.candidates[k]);
      rp.problem.cost.push_back(cost_model.latency_us(view));
      id_of[rp.candidates[k]] = static_cast<int>(k);
      for (const auto& t : view.outputs) {
        writers[t].push_back(static_cast<int>(k));
        auto alt = alternatives.find(t);
        if (alt != alternatives.end()) writers[alt->second].push_back(static_cast<int>(k));
      }
      for (const auto& t : view.inputs) {
        auto p = producers.find(t);
        if (p != producers.end() && split.region_of[p->second] == static_cast<int>(r)) {
          needs[k].push_back(t);
        }
      }
    }
    st.cost_seconds += seconds_since(t0);
    for (const auto& t : required[r]) rp.problem.covers.push_back(writers[t]);
    std::unordered_map<std::size_t, std::vector<int>> containing;
    for (std::size_t k = 0; k < rp.candidates.size(); ++k) {
      for (std::size_t v : rp.candidates[k]) containing[v].push_back(static_cast<int>(k));
    }
    for (std::size_t v : split.regions[r]) {
      if (mandatory[v]) rp.problem.covers.push_back(containing[v]);
    }
    std::map<std::string, std::vector<int>> readers;  // ordered: a deterministic BLP
    for (std::size_t k = 0; k < needs.size(); ++k) {
      for (const auto& t : needs[k]) readers[t].push_back(static_cast<int>(k));
    }
    for (auto& [t, consumers] : readers) {
      rp.problem.requirements.push_back({std::move(consumers), writers[t]});
    }
    for (const auto& k : greedy) {
      auto it = id_of.find(k);
      if (it != id_of.end()) warm.push_back(it->second);
    }
    rp.problem.warm_start = warm;
  }

  // Solve; if the chosen kernels cannot be ordered, forbid that cycle and re-solve.
  // The time limit is the whole search's: each region gets an equal share of what is
  // left, and once it is spent the remaining regions keep their greedy (warm-start)
  // selection instead of a solver run (a model of thousands of regions must not take
  // thousands of solver minimums).
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(options.time_limit_s));
  auto region_limit = [&](std::size_t regions_left) {
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    return left / static_cast<double>(std::max<std::size_t>(1, regions_left));
  };
  for (std::size_t r = 0; r < problems.size(); ++r) {
    problems[r].result =
        solve_selection_within(problems[r].problem, region_limit(problems.size() - r));
  }
  for (int attempt = 0;; ++attempt) {
    std::vector<KernelChoice> choices;
    std::vector<std::pair<std::size_t, int>> owner;  // (region, candidate)
    for (std::size_t r = 0; r < problems.size(); ++r) {
      for (int k : problems[r].result.chosen) {
        choices.push_back({problems[r].candidates[static_cast<std::size_t>(k)],
                           problems[r].problem.cost[static_cast<std::size_t>(k)]});
        owner.emplace_back(r, k);
      }
    }
    std::vector<std::size_t> cycle;
    auto plan = build_plan(index, alternatives, choices, "optimal", &cycle);
    if (plan) {
      out.optimal = std::move(*plan);
      break;
    }
    if (attempt > 50 || cycle.empty())
      internal_error("orchestration: could not schedule the chosen kernels");
    const std::size_t region = owner[cycle.front()].first;
    std::vector<int> nogood;
    for (std::size_t c : cycle) {
      if (owner[c].first != region) internal_error("orchestration: kernel cycle spans regions");
      nogood.push_back(owner[c].second);
    }
    std::sort(nogood.begin(), nogood.end());
    problems[region].problem.nogoods.push_back(nogood);
    ++st.cycle_cuts;
    problems[region].result = solve_selection_within(problems[region].problem, region_limit(1));
  }
  if (options.k_best > 1) {
    out.ranked = rank_plans(index, alternatives, problems, out.optimal, options, st);
  }
  for (const auto& rp : problems) {
    st.blp_objective_us += rp.result.objective;
    st.blp_bound_us += rp.result.best_bound;
    st.blp_gap = std::max(st.blp_gap, rp.result.gap);
    st.blp_nodes += rp.result.nodes;
    st.solve_seconds += rp.result.seconds;
    st.proven_optimal = st.proven_optimal && rp.result.proven_optimal;
  }
  st.total_seconds = seconds_since(start);
  return out;
}

}  // namespace orchid
