// Homogeneous data-parallel baseline.
#include <fmt/format.h>

#include "mapping/baselines.hpp"

namespace orchid::mapping {

BaselineResult data_parallel_baseline(const Evaluator& ev) {
  const System& sys = ev.system();
  const Workload& w = ev.workload();
  BaselineResult best;
  best.name = "data-parallel";
  const int devices = sys.fpga_devices > 0 ? sys.fpga_devices : sys.total_devices();
  for (int d = 0; d < static_cast<int>(sys.designs.size()); ++d) {
    if (sys.fpga_devices > 0 && sys.designs[d].is_gpu) continue;
    if (sys.fpga_devices == 0 && !sys.designs[d].is_gpu) continue;
    bool all = true;
    for (const Layer& l : w.layers) all &= sys.designs[d].supports_kind(l.kind);
    if (!all) continue;
    Mapping m;
    m.groups.push_back({d, devices, 0});
    m.group_of.assign(w.layers.size(), 0);
    m.strategy.assign(w.layers.size(), Strategy::Batch);
    const double t = ev.makespan(m);
    if (!best.available || t < best.latency) {
      best.available = true;
      best.latency = t;
      best.mapping = m;
      best.note = fmt::format("{} x {}", devices, sys.designs[d].id);
    }
  }
  if (!best.available) best.note = "no single design runs every layer type of the workload";
  return best;
}

}  // namespace orchid::mapping
