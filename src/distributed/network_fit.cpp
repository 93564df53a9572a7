#include "distributed/network_fit.hpp"

#include <cmath>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "util/error.hpp"

namespace orchid::distributed {

AlphaBeta fit_alpha_beta(const std::vector<Sample>& samples, const std::string& what) {
  if (samples.size() < 2) fail("{}: need at least two message sizes to fit", what);
  // Relative least squares (weights 1 / t^2): small messages, where the latency shows,
  // count as much as large ones, where the bandwidth shows.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const Sample& s : samples) {
    if (!(s.seconds > 0)) fail("{}: a measured time is not positive", what);
    const double w = 1 / (s.seconds * s.seconds);
    sw += w;
    sx += w * s.bytes;
    sy += w * s.seconds;
    sxx += w * s.bytes * s.bytes;
    sxy += w * s.bytes * s.seconds;
  }
  const double n = static_cast<double>(samples.size());
  const double denom = sw * sxx - sx * sx;
  if (!(denom > 0)) fail("{}: message sizes must differ", what);
  double slope = (sw * sxy - sx * sy) / denom;
  double intercept = (sy - slope * sx) / sw;
  if (intercept < 0) {  // refit through the origin
    intercept = 0;
    slope = sxy / sxx;
  }
  if (!(slope > 0)) fail("{}: times do not grow with message size; cannot fit a bandwidth", what);
  AlphaBeta f;
  f.latency_us = intercept * 1e6;
  f.gbs = 1.0 / slope / 1e9;
  double err = 0;
  for (const Sample& s : samples) {
    const double r = (f.seconds(s.bytes) - s.seconds) / s.seconds;
    err += r * r;
  }
  f.rms_relative_error = std::sqrt(err / n);
  return f;
}

namespace {

toml::table fit_table(const AlphaBeta& f) {
  return toml::table{
      {"latency_us", f.latency_us}, {"gbs", f.gbs}, {"rms_relative_error", f.rms_relative_error}};
}

}  // namespace

std::string with_network_figures(const std::string& text, const std::string& path,
                                 const NetworkFigures& fig) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    fail("{}:{}: TOML syntax error: {}", path, e.source().begin.line, e.description());
  }
  toml::table* bw = root["bandwidth"].as_table();
  if (bw == nullptr) {
    root.insert("bandwidth", toml::table{});
    bw = root["bandwidth"].as_table();
  }
  // Ranks on one machine or a network: every level is the same point-to-point link.
  bw->insert_or_assign("intra_group_gbs", fig.p2p.gbs);
  bw->insert_or_assign("inter_group_gbs", fig.p2p.gbs);
  bw->insert_or_assign("host_gbs", fig.p2p.gbs);
  toml::table net{{"ranks", fig.ranks},
                  {"p2p", fit_table(fig.p2p)},
                  {"allreduce", fit_table(fig.allreduce)},
                  {"allgather", fit_table(fig.allgather)},
                  {"reduce_scatter", fit_table(fig.reduce_scatter)}};
  if (fig.runner_step_us >= 0) {
    toml::table runner{{"step_us", fig.runner_step_us}};
    if (fig.runner_gbs > 0) runner.insert("gbs", fig.runner_gbs);
    if (fig.runner_split_us >= 0) runner.insert("split_us", fig.runner_split_us);
    net.insert("runner", std::move(runner));
  }
  root.insert_or_assign("network", std::move(net));
  // The file's leading comment block is kept (without an earlier run's note, so the note
  // appears once); toml++ drops the other comments.
  const std::string note =
      "# [bandwidth] and [network]: written by `orchid calibrate-net` (alpha-beta fits).";
  std::ostringstream out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line) && line.starts_with("#");) {
    if (line != note) out << line << "\n";
  }
  out << note << "\n" << root << "\n";
  return out.str();
}

}  // namespace orchid::distributed
