#include "distributed/timeline_svg.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace orchid::distributed {

namespace {

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string timeline_svg(const MappingPlan& plan, const DistributedRun& run,
                         const mapping::Workload& w) {
  const int ranks = plan.devices();
  double end = plan.latency_s;
  for (const TimedEvent& e : run.events) {
    if (e.inference == 0) end = std::max(end, e.end_s);
  }
  end = std::max(end, 1e-9);
  const double left = 170, width = 900, row = 22;
  const double height = 40 + row * 2 * ranks + 30;
  auto x = [&](double t) { return left + t / end * width; };
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n",
      left + width + 40, height);
  out += fmt::format(
      "<text x=\"4\" y=\"16\">{}: predicted {:.3f} ms (grey) vs measured {:.3f} ms, inference 0 "
      "(blue compute, orange receive, green send)</text>\n",
      escape(plan.path), plan.latency_s * 1e3, run.latency_s.empty() ? 0 : run.latency_s[0] * 1e3);
  auto bar = [&](double y, double a, double b, const char* colour, const std::string& tip) {
    out += fmt::format(
        "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\" "
        "stroke=\"white\" stroke-width=\"0.3\"><title>{}</title></rect>\n",
        x(a), y, std::max(0.5, x(b) - x(a)), row - 6, colour, escape(tip));
  };
  for (int r = 0; r < ranks; ++r) {
    const double yp = 30 + row * 2 * r, ym = yp + row;
    int group = 0;
    for (std::size_t g = 0; g < plan.groups.size(); ++g) {
      if (r >= plan.groups[g].first_device &&
          r < plan.groups[g].first_device + plan.groups[g].devices) {
        group = static_cast<int>(g);
      }
    }
    out += fmt::format("<text x=\"4\" y=\"{}\">rank {} G{} predicted</text>\n", yp + 12, r, group);
    out += fmt::format("<text x=\"4\" y=\"{}\">rank {} measured</text>\n", ym + 12, r);
    for (std::size_t l = 0; l < plan.layers.size(); ++l) {
      if (plan.layers[l].group != group) continue;
      bar(yp, plan.layers[l].start_s, plan.layers[l].finish_s, "#b0b0b0",
          fmt::format("{} ({})", w.layers[l].name,
                      mapping::strategy_name(plan.layers[l].sharding)));
    }
    for (const TimedEvent& e : run.events) {
      if (e.rank != r || e.inference != 0) continue;
      const char* colour = e.kind == "compute" ? "#4878cf"
                           : e.kind == "recv"  ? "#f0a030"
                                               : "#50a050";
      const std::string layer = e.layer >= 0 ? w.layers[e.layer].name : "";
      bar(ym, e.start_s, e.end_s, colour, fmt::format("{} {} {}", e.kind, layer, e.how));
    }
  }
  const double axis = 30 + row * 2 * ranks + 14;
  for (int i = 0; i <= 4; ++i) {
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.3g}</text>\n",
                       x(end * i / 4), axis, end * i / 4 * 1e3);
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\">ms</text>\n</svg>\n", left + width + 4, axis);
  return out;
}

}  // namespace orchid::distributed
