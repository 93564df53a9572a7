#include "orchestrate/selection_blp.hpp"

#include <CbcModel.hpp>
#include <CbcSolver.hpp>
#include <CoinPackedMatrix.hpp>
#include <OsiClpSolverInterface.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>

#include "util/error.hpp"

namespace orchid {

bool selection_is_feasible(const SelectionProblem& p, const std::vector<int>& chosen) {
  std::vector<char> on(p.cost.size(), 0);
  for (int k : chosen) on[static_cast<std::size_t>(k)] = 1;
  auto any = [&](const std::vector<int>& set) {
    return std::any_of(set.begin(), set.end(),
                       [&](int k) { return on[static_cast<std::size_t>(k)]; });
  };
  for (const auto& s : p.covers) {
    if (!any(s)) return false;
  }
  for (const auto& r : p.requirements) {
    if (any(r.consumers) && !any(r.providers)) return false;
  }
  for (const auto& c : p.nogoods) {
    if (std::all_of(c.begin(), c.end(), [&](int k) { return on[static_cast<std::size_t>(k)]; })) {
      return false;
    }
  }
  return true;
}

SelectionResult solve_selection_brute_force(const SelectionProblem& p) {
  const std::size_t n = p.cost.size();
  if (n > 24) fail("brute-force selection: {} variables is too many", n);
  SelectionResult best;
  best.objective = std::numeric_limits<double>::infinity();
  for (std::uint32_t mask = 0; mask < (1u << n); ++mask) {
    std::vector<int> chosen;
    double obj = 0;
    for (std::size_t k = 0; k < n; ++k) {
      if (mask & (1u << k)) {
        chosen.push_back(static_cast<int>(k));
        obj += p.cost[k];
      }
    }
    if (obj < best.objective && selection_is_feasible(p, chosen)) {
      best.objective = obj;
      best.chosen = chosen;
    }
  }
  if (!std::isfinite(best.objective)) fail("brute-force selection: problem is infeasible");
  best.best_bound = best.objective;
  best.proven_optimal = true;
  return best;
}

SelectionResult solve_selection_cbc(const SelectionProblem& p, double time_limit_s) {
  const auto start = std::chrono::steady_clock::now();
  const int n = static_cast<int>(p.cost.size());
  SelectionResult result;
  if (n == 0) {
    if (!p.covers.empty()) fail("kernel selection: a tensor has no candidate producer");
    return result;
  }
  for (const auto& s : p.covers) {
    if (s.empty()) fail("kernel selection: a required tensor has no candidate producer");
  }
  // CBC asserts on non-finite objective coefficients; they come from absurd model sizes.
  for (double c : p.cost) {
    if (!std::isfinite(c) || c < 0) {
      fail("kernel selection: a candidate kernel's cost is {} (the model's sizes are out of range)",
           c);
    }
  }

  // Rows are collected first and the matrix built in one piece: appending rows one by
  // one makes CoinPackedMatrix copy itself as it grows (quadratic; a region of 16,625
  // candidates spent ~90 s there before CBC started).
  std::vector<CoinBigIndex> starts;
  std::vector<int> lengths;
  std::vector<int> indices;
  std::vector<double> elements;
  std::vector<double> row_lo, row_hi;
  const double inf = COIN_DBL_MAX;
  auto add_row = [&](const std::vector<int>& idx, double coefficient_of_last, double lo,
                     double hi) {
    starts.push_back(static_cast<CoinBigIndex>(indices.size()));
    lengths.push_back(static_cast<int>(idx.size()));
    for (std::size_t k = 0; k < idx.size(); ++k) {
      indices.push_back(idx[k]);
      elements.push_back(k + 1 == idx.size() ? coefficient_of_last : 1.0);
    }
    row_lo.push_back(lo);
    row_hi.push_back(hi);
  };
  for (const auto& s : p.covers) add_row(s, 1.0, 1.0, inf);
  // A requirement with one consumer j is the row  sum providers - a_j >= 0. With several,
  // a continuous y in [0, 1] stands for "the tensor is computed":
  //   sum providers - y >= 0  and  y - a_j >= 0 for each consumer j,
  // which has the same integer solutions and the same LP relaxation, in
  // |providers| + 2 |consumers| nonzeros instead of |providers| * |consumers|.
  int columns = n;
  std::vector<std::size_t> aux_of;  // requirement index of each auxiliary column
  for (std::size_t r = 0; r < p.requirements.size(); ++r) {
    const Requirement& req = p.requirements[r];
    if (req.consumers.size() == 1) {
      std::vector<int> idx = req.providers;  // a_j itself is never its own provider
      idx.push_back(req.consumers.front());
      add_row(idx, -1.0, 0.0, inf);
      continue;
    }
    if (req.consumers.empty()) continue;
    const int y = columns++;
    aux_of.push_back(r);
    std::vector<int> idx = req.providers;
    idx.push_back(y);
    add_row(idx, -1.0, 0.0, inf);
    for (int j : req.consumers) add_row({y, j}, -1.0, 0.0, inf);
  }
  for (const auto& c : p.nogoods) add_row(c, 1.0, -inf, static_cast<double>(c.size()) - 1.0);
  starts.push_back(static_cast<CoinBigIndex>(indices.size()));
  const CoinPackedMatrix matrix(false, columns, static_cast<int>(lengths.size()),
                                static_cast<CoinBigIndex>(indices.size()), elements.data(),
                                indices.data(), starts.data(), lengths.data());
  const auto cols = static_cast<std::size_t>(columns);
  std::vector<double> col_lo(cols, 0.0);
  std::vector<double> col_hi(cols, 1.0);
  std::vector<double> objective = p.cost;
  objective.resize(cols, 0.0);

  OsiClpSolverInterface solver;
  solver.loadProblem(matrix, col_lo.data(), col_hi.data(), objective.data(), row_lo.data(),
                     row_hi.data());
  for (int k = 0; k < n; ++k) solver.setInteger(k);
  // CBC's -sec is checked between nodes; the root LP has its own clock.
  solver.getModelPtr()->setMaximumSeconds(std::max(1.0, time_limit_s));
  solver.messageHandler()->setLogLevel(0);

  CbcModel model(solver);
  model.messageHandler()->setLogLevel(0);
  model.solver()->messageHandler()->setLogLevel(0);
  CbcSolverUsefulData data;
  data.noPrinting_ = true;
  data.useSignalHandler_ = false;
  CbcMain0(model, data);
  if (!p.warm_start.empty() && selection_is_feasible(p, p.warm_start)) {
    std::vector<double> x(cols, 0.0);
    double obj = 0;
    for (int k : p.warm_start) {
      x[static_cast<std::size_t>(k)] = 1.0;
      obj += p.cost[static_cast<std::size_t>(k)];
    }
    for (std::size_t a = 0; a < aux_of.size(); ++a) {
      for (int k : p.requirements[aux_of[a]].providers) {
        if (x[static_cast<std::size_t>(k)] > 0.5) x[static_cast<std::size_t>(n) + a] = 1.0;
      }
    }
    model.setBestSolution(x.data(), columns, obj, false);
  }
  const std::string seconds = std::to_string(std::max(1.0, time_limit_s));
  const char* argv[] = {"orchid", "-log",          "0",      "-slog", "0",
                        "-sec",   seconds.c_str(), "-solve", "-quit"};
  CbcMain1(static_cast<int>(sizeof(argv) / sizeof(argv[0])), argv, model, nullptr, data);

  const double* x = model.bestSolution();
  if (!x) fail("kernel selection: CBC found no feasible plan within {} s", time_limit_s);
  for (int k = 0; k < n; ++k) {
    if (x[k] > 0.5) result.chosen.push_back(k);
  }
  if (!selection_is_feasible(p, result.chosen)) {
    fail("kernel selection: CBC returned an infeasible selection");
  }
  result.objective = 0;
  for (int k : result.chosen) result.objective += p.cost[static_cast<std::size_t>(k)];
  result.proven_optimal = model.isProvenOptimal();
  result.best_bound = result.proven_optimal ? result.objective : model.getBestPossibleObjValue();
  result.best_bound = std::min(result.best_bound, result.objective);
  result.gap =
      result.objective > 0 ? (result.objective - result.best_bound) / result.objective : 0.0;
  if (result.gap < 1e-9) result.gap = 0.0;
  result.nodes = model.getNodeCount();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace orchid
