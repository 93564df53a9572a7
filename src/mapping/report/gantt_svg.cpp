// A mapping's schedule as a GanttChart.
#include "mapping/report/gantt_svg.hpp"

#include <fmt/format.h>

#include "mapping/report/gantt_chart.hpp"

namespace orchid::mapping {

std::string gantt_svg(const Evaluator& ev, const Mapping& m, const Schedule& s) {
  const System& sys = ev.system();
  const Workload& w = ev.workload();
  enum Kind { Compute, Comm, Weights, Sent };
  GanttChart chart;
  chart.title = fmt::format("{} (batch {}) on {}: predicted {:.4g} ms", w.name, w.batch, sys.name,
                            s.makespan * 1e3);
  chart.kinds = {{"compute", "#4878d0", false},
                 {"communication in the group", "#ee854a", true},
                 {"weights from the host", "#8c8c8c", true},
                 {"activation to another group", "#c03030", false}};
  chart.end_s = s.makespan;
  chart.rows.resize(s.devices.size());
  for (std::size_t g = 0; g < m.groups.size(); ++g) {
    for (int d = 0; d < m.groups[g].size; ++d) {
      const std::size_t dev = static_cast<std::size_t>(m.groups[g].first_device + d);
      if (dev < chart.rows.size()) {
        chart.rows[dev].label =
            fmt::format("dev {} G{} {}", dev, g, sys.designs[m.groups[g].design].id);
      }
    }
  }
  for (std::size_t dev = 0; dev < s.devices.size(); ++dev) {
    if (chart.rows[dev].label.empty()) chart.rows[dev].label = fmt::format("dev {} idle", dev);
    for (const Interval& iv : s.devices[dev]) {
      const Kind kind = iv.kind == Interval::Kind::Compute ? Compute
                        : iv.kind == Interval::Kind::Comm  ? Comm
                                                           : Weights;
      const std::string& name = w.layers[static_cast<std::size_t>(iv.layer)].name;
      chart.rows[dev].bars.push_back(
          {kind, iv.start, iv.end, name,
           fmt::format("{} {} ({}) {:.4g}-{:.4g} ms", chart.kinds[kind].name, name,
                       strategy_name(s.strategy[static_cast<std::size_t>(iv.layer)]),
                       iv.start * 1e3, iv.end * 1e3)});
    }
  }
  for (const Transfer& t : s.transfers) {
    if (t.end <= t.start) continue;
    chart.arrows.push_back({Sent, m.groups[static_cast<std::size_t>(t.from_group)].first_device,
                            m.groups[static_cast<std::size_t>(t.to_group)].first_device, t.start,
                            t.end,
                            fmt::format("{} -> {}: {:.3g} MB, {:.4g}-{:.4g} ms",
                                        w.layers[static_cast<std::size_t>(t.from_layer)].name,
                                        w.layers[static_cast<std::size_t>(t.to_layer)].name,
                                        t.bytes / 1e6, t.start * 1e3, t.end * 1e3)});
  }
  return render_gantt_svg(chart);
}

}  // namespace orchid::mapping
