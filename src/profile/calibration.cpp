#include "profile/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "cost/analytic_cost_model.hpp"
#include "util/error.hpp"
#include "util/statistics.hpp"

namespace orchid {

namespace {

struct Parameter {
  const char* key;
  std::function<double&(DeviceSpec&)> at;
  double lo;
  double hi;
};

const std::vector<Parameter>& parameters() {
  static const std::vector<Parameter> list = {
      {"launch_overhead_us", [](DeviceSpec& d) -> double& { return d.launch_overhead_us; }, 1e-3,
       1e6},
      {"dram_bandwidth_gbs", [](DeviceSpec& d) -> double& { return d.dram_bandwidth_gbs; }, 1e-3,
       1e7},
      {"model.vector_efficiency",
       [](DeviceSpec& d) -> double& { return d.curves.vector_efficiency; }, 1e-6, 1},
      {"model.transcendental_flops",
       [](DeviceSpec& d) -> double& { return d.curves.transcendental_flops; }, 1e-3, 1e5},
      {"model.gemm_efficiency", [](DeviceSpec& d) -> double& { return d.curves.gemm_efficiency; },
       1e-6, 1},
      {"model.direct_linear_efficiency",
       [](DeviceSpec& d) -> double& { return d.curves.direct_linear_efficiency; }, 1e-6, 1},
  };
  return list;
}

// The fit works on theta = ln(parameter), bounded.
class Fit {
 public:
  Fit(const DeviceSpec& base, const std::vector<KernelView>& kernels,
      const std::vector<double>& measured)
      : base_(base) {
    for (const auto& k : kernels) terms_.push_back(kernel_cost_terms(k, base));
    for (double m : measured) log_measured_.push_back(std::log(std::max(m, 1e-6)));
  }

  DeviceSpec spec(const std::vector<double>& theta) const {
    DeviceSpec d = base_;
    for (std::size_t j = 0; j < theta.size(); ++j) parameters()[j].at(d) = std::exp(theta[j]);
    return d;
  }

  std::vector<double> residuals(const std::vector<double>& theta) const {
    const DeviceSpec d = spec(theta);
    std::vector<double> r(terms_.size());
    for (std::size_t i = 0; i < terms_.size(); ++i) {
      const double p = cost_from_terms(terms_[i], d).total_us;
      r[i] = std::log(std::max(p, 1e-9)) - log_measured_[i];
    }
    return r;
  }

  static double loss(const std::vector<double>& r) {
    double s = 0;
    for (double x : r) s += x * x;
    return s;
  }

 private:
  const DeviceSpec& base_;
  std::vector<KernelCostTerms> terms_;  // the graph-derived part, once per kernel
  std::vector<double> log_measured_;
};

// Solves A x = b (small, dense, A symmetric positive semi-definite plus damping).
bool solve(std::vector<std::vector<double>> a, std::vector<double> b, std::vector<double>& x) {
  const std::size_t n = b.size();
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < n; ++r) {
      if (std::fabs(a[r][c]) > std::fabs(a[pivot][c])) pivot = r;
    }
    if (std::fabs(a[pivot][c]) < 1e-300) return false;
    std::swap(a[c], a[pivot]);
    std::swap(b[c], b[pivot]);
    for (std::size_t r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (std::size_t k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  x.assign(n, 0);
  for (std::size_t c = n; c-- > 0;) {
    double s = b[c];
    for (std::size_t k = c + 1; k < n; ++k) s -= a[c][k] * x[k];
    x[c] = s / a[c][c];
  }
  return true;
}

struct FitOutcome {
  std::vector<double> theta;
  std::vector<bool> fitted;
  std::vector<bool> at_bound;
  int iterations = 0;
};

FitOutcome levenberg_marquardt(const Fit& fit, std::vector<double> theta) {
  const auto& params = parameters();
  const std::size_t p = theta.size();
  FitOutcome out;
  out.fitted.assign(p, false);
  out.at_bound.assign(p, false);
  std::vector<double> lo(p), hi(p);
  for (std::size_t j = 0; j < p; ++j) {
    lo[j] = std::log(params[j].lo);
    hi[j] = std::log(params[j].hi);
    theta[j] = std::clamp(theta[j], lo[j], hi[j]);
  }
  // The model has kinks (max of memory and compute, min over GEMM tilings), so the loss
  // has local minima: first a coarse coordinate search on a log grid, then LM from there.
  double loss = Fit::loss(fit.residuals(theta));
  for (int pass = 0; pass < 4; ++pass) {
    for (std::size_t j = 0; j < p; ++j) {
      const double centre = theta[j];
      for (double step : {-2.0, -1.0, -0.5, -0.25, 0.25, 0.5, 1.0, 2.0}) {
        std::vector<double> t = theta;
        t[j] = std::clamp(centre + step, lo[j], hi[j]);
        const double lt = Fit::loss(fit.residuals(t));
        if (lt < loss) {
          loss = lt;
          theta = t;
          out.fitted[j] = true;
        }
      }
    }
  }
  std::vector<double> r = fit.residuals(theta);
  double lambda = 1e-3;
  const double h = 1e-4;
  for (int iter = 0; iter < 200; ++iter) {
    out.iterations = iter + 1;
    // Numeric Jacobian (forward differences; backward at an upper bound).
    std::vector<std::vector<double>> jac(p);
    std::vector<bool> active(p, false);
    for (std::size_t j = 0; j < p; ++j) {
      std::vector<double> t = theta;
      const double step = theta[j] + h > hi[j] ? -h : h;
      t[j] += step;
      const std::vector<double> rj = fit.residuals(t);
      jac[j].resize(r.size());
      double norm = 0;
      for (std::size_t i = 0; i < r.size(); ++i) {
        jac[j][i] = (rj[i] - r[i]) / step;
        norm += jac[j][i] * jac[j][i];
      }
      active[j] = norm > 1e-12;
      if (active[j]) out.fitted[j] = true;
    }
    std::vector<std::vector<double>> a(p, std::vector<double>(p, 0));
    std::vector<double> g(p, 0);
    for (std::size_t j = 0; j < p; ++j) {
      for (std::size_t i = 0; i < r.size(); ++i) g[j] += jac[j][i] * r[i];
      for (std::size_t k = 0; k < p; ++k) {
        for (std::size_t i = 0; i < r.size(); ++i) a[j][k] += jac[j][i] * jac[k][i];
      }
    }
    bool improved = false;
    while (lambda < 1e12) {
      std::vector<std::vector<double>> damped = a;
      std::vector<double> rhs(p);
      for (std::size_t j = 0; j < p; ++j) {
        rhs[j] = -g[j];
        if (!active[j]) {  // frozen: delta_j = 0
          for (std::size_t k = 0; k < p; ++k) damped[j][k] = damped[k][j] = 0;
          damped[j][j] = 1;
          rhs[j] = 0;
        } else {
          damped[j][j] += lambda * std::max(a[j][j], 1e-12);
        }
      }
      std::vector<double> delta;
      if (!solve(damped, rhs, delta)) {
        lambda *= 10;
        continue;
      }
      std::vector<double> t = theta;
      for (std::size_t j = 0; j < p; ++j) t[j] = std::clamp(theta[j] + delta[j], lo[j], hi[j]);
      std::vector<double> rt = fit.residuals(t);
      const double lt = Fit::loss(rt);
      if (lt < loss) {
        const double gain = loss - lt;
        theta = t;
        r = std::move(rt);
        loss = lt;
        lambda = std::max(lambda * 0.3, 1e-9);
        improved = gain > 1e-12 * std::max(1.0, loss);
        break;
      }
      lambda *= 10;
    }
    if (!improved) break;
  }
  // Bound hits: an upper bound within a step and a gradient pushing past it.
  for (std::size_t j = 0; j < p; ++j) {
    out.at_bound[j] = out.fitted[j] && (theta[j] >= hi[j] - 1e-9 || theta[j] <= lo[j] + 1e-9);
  }
  out.theta = theta;
  return out;
}

double rms(const std::vector<double>& r) {
  return r.empty() ? 0.0 : std::sqrt(Fit::loss(r) / static_cast<double>(r.size()));
}

std::vector<double> initial_theta(const DeviceSpec& base) {
  std::vector<double> theta;
  DeviceSpec d = base;
  for (const auto& param : parameters()) {
    theta.push_back(std::log(std::clamp(param.at(d), param.lo, param.hi)));
  }
  return theta;
}

}  // namespace

std::vector<double> analytic_predictions(const DeviceSpec& device,
                                         const std::vector<KernelView>& kernels) {
  std::vector<double> out;
  out.reserve(kernels.size());
  for (const auto& k : kernels) out.push_back(analytic_kernel_cost(k, device).total_us);
  return out;
}

CalibrationResult calibrate_device(const DeviceSpec& base, const std::vector<KernelView>& kernels,
                                   const std::vector<double>& measured_us,
                                   std::size_t min_kernels) {
  if (kernels.size() != measured_us.size()) {
    fail("calibrate_device: {} kernels but {} measurements", kernels.size(), measured_us.size());
  }
  CalibrationResult result;
  result.device = base;
  result.kernels = kernels.size();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  result.spearman_before = result.spearman_after = result.spearman_after_heldout = nan;
  const Fit whole(base, kernels, measured_us);
  const std::vector<double> theta0 = initial_theta(base);
  result.rms_log_error_before = result.rms_log_error_after = rms(whole.residuals(theta0));
  result.spearman_before =
      spearman_rank_correlation(analytic_predictions(base, kernels), measured_us);
  result.spearman_after = result.spearman_before;
  if (kernels.size() < std::max<std::size_t>(min_kernels, 2)) {
    result.note = fmt::format("{} measured kernels, calibration needs at least {}", kernels.size(),
                              std::max<std::size_t>(min_kernels, 2));
    return result;
  }
  const FitOutcome fit = levenberg_marquardt(whole, theta0);
  result.ok = true;
  result.iterations = fit.iterations;
  result.device = whole.spec(fit.theta);
  DeviceSpec base_copy = base;
  for (std::size_t j = 0; j < parameters().size(); ++j) {  // exactly as given (no exp(log))
    if (!fit.fitted[j]) parameters()[j].at(result.device) = parameters()[j].at(base_copy);
  }
  result.rms_log_error_after = rms(whole.residuals(fit.theta));
  result.spearman_after =
      spearman_rank_correlation(analytic_predictions(result.device, kernels), measured_us);
  DeviceSpec before = base;
  for (std::size_t j = 0; j < parameters().size(); ++j) {
    CalibratedParameter cp;
    cp.key = parameters()[j].key;
    cp.before = parameters()[j].at(before);
    cp.after = parameters()[j].at(result.device);
    cp.fitted = fit.fitted[j];
    cp.at_bound = fit.at_bound[j];
    result.parameters.push_back(cp);
  }

  // Two-fold check: fit on the even samples, predict the odd ones, and the other way.
  if (kernels.size() >= 2 * std::max<std::size_t>(min_kernels, 2)) {
    std::vector<KernelView> half[2];
    std::vector<double> measured[2];
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      half[i % 2].push_back(kernels[i]);
      measured[i % 2].push_back(measured_us[i]);
    }
    std::vector<double> predicted_all, measured_all;
    for (int f = 0; f < 2; ++f) {
      const Fit part(base, half[f], measured[f]);
      const DeviceSpec d = part.spec(levenberg_marquardt(part, theta0).theta);
      const std::vector<double> p = analytic_predictions(d, half[1 - f]);
      predicted_all.insert(predicted_all.end(), p.begin(), p.end());
      measured_all.insert(measured_all.end(), measured[1 - f].begin(), measured[1 - f].end());
    }
    result.spearman_after_heldout = spearman_rank_correlation(predicted_all, measured_all);
  }
  return result;
}

}  // namespace orchid
