#include "distributed/timeline_svg.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "mapping/report/gantt_chart.hpp"

namespace orchid::distributed {

std::string timeline_svg(const MappingPlan& plan, const DistributedRun& run,
                         const mapping::Workload& w) {
  enum Kind { Predicted, Compute, Receive, Send };
  mapping::GanttChart chart;
  chart.title =
      fmt::format("{}: predicted {:.4g} ms vs measured {:.4g} ms (inference 0)", plan.path,
                  plan.latency_s * 1e3, run.latency_s.empty() ? 0 : run.latency_s[0] * 1e3);
  chart.kinds = {{"predicted layer", "#a8a8a8", false},
                 {"measured compute", "#4878d0", false},
                 {"receive", "#ee854a", true},
                 {"send", "#50a050", true}};
  chart.end_s = plan.latency_s;
  const int ranks = plan.devices();
  for (int r = 0; r < ranks; ++r) {
    int group = 0;
    for (std::size_t g = 0; g < plan.groups.size(); ++g) {
      if (r >= plan.groups[g].first_device &&
          r < plan.groups[g].first_device + plan.groups[g].devices) {
        group = static_cast<int>(g);
      }
    }
    mapping::GanttRow predicted{fmt::format("rank {} G{} predicted", r, group), {}};
    for (std::size_t l = 0; l < plan.layers.size(); ++l) {
      if (plan.layers[l].group != group) continue;
      predicted.bars.push_back({Predicted, plan.layers[l].start_s, plan.layers[l].finish_s,
                                w.layers[l].name,
                                fmt::format("{} ({})", w.layers[l].name,
                                            mapping::strategy_name(plan.layers[l].sharding))});
    }
    mapping::GanttRow measured{fmt::format("rank {} measured", r), {}};
    for (const TimedEvent& e : run.events) {
      if (e.rank != r || e.inference != 0) continue;
      const Kind kind = e.kind == "compute" ? Compute : e.kind == "recv" ? Receive : Send;
      const std::string layer =
          e.layer >= 0 ? w.layers[static_cast<std::size_t>(e.layer)].name : "";
      measured.bars.push_back(
          {kind, e.start_s, e.end_s, layer, fmt::format("{} {} {}", e.kind, layer, e.how)});
    }
    chart.rows.push_back(std::move(predicted));
    chart.rows.push_back(std::move(measured));
  }
  return mapping::render_gantt_svg(chart);
}

}  // namespace orchid::distributed
