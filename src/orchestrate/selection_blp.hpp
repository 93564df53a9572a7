// The kernel-selection binary linear program, independent of graphs and costs:
//   minimise   sum_k cost_k a_k,  a_k in {0,1}
//   subject to sum_{k in S} a_k >= 1          for every cover set S (graph outputs)
//              sum_{k in P} a_k >= a_j        for every requirement (P, J) and j in J
//                                             (P: the producers of a tensor, J: its consumers)
//              sum_{k in C} a_k <= |C| - 1    for every no-good C (unschedulable cycles)
// solved to proven optimality by COIN-OR CBC (through CbcMain0/CbcMain1, i.e. with the
// default cuts and heuristics), with an optional warm start and a time limit.
#pragma once

#include <utility>
#include <vector>

namespace orchid {

// The candidates in `consumers` each need one of `providers` (the candidates that write
// one tensor they read). One entry per tensor, not per (consumer, tensor) pair: a tensor
// with many producers and many consumers would otherwise repeat its producer list per
// consumer, a matrix quadratic in the region's width (a two-layer RNN region reached
// gigabytes before CBC started).
struct Requirement {
  std::vector<int> consumers;
  std::vector<int> providers;
};

struct SelectionProblem {
  std::vector<double> cost;
  std::vector<std::vector<int>> covers;
  std::vector<Requirement> requirements;
  std::vector<std::vector<int>> nogoods;
  std::vector<int> warm_start;  // indices of a feasible selection, may be empty
};

struct SelectionResult {
  std::vector<int> chosen;  // sorted
  double objective = 0;
  double best_bound = 0;
  double gap = 0;  // (objective - bound) / objective, 0 when proven optimal
  long nodes = 0;
  double seconds = 0;
  bool proven_optimal = false;
};

// Throws orchid::Error if the problem is infeasible or no solution was found in time.
SelectionResult solve_selection_cbc(const SelectionProblem& problem, double time_limit_s);

// Exhaustive search over all subsets; for tests (at most 24 variables).
SelectionResult solve_selection_brute_force(const SelectionProblem& problem);

// True if `chosen` satisfies every constraint.
bool selection_is_feasible(const SelectionProblem& problem, const std::vector<int>& chosen);

}  // namespace orchid
