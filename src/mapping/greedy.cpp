// Computation-prioritised greedy baseline, and the fixed device mix both it and H2H use.
#include <algorithm>

#include "mapping/baselines.hpp"
#include "util/error.hpp"

namespace orchid::mapping {

std::vector<int> baseline_device_designs(const System& sys) {
  std::vector<int> out;
  for (int i = 0; i < sys.fpga_devices; ++i) {
    out.push_back(sys.baseline_designs[i % sys.baseline_designs.size()]);
  }
  out.insert(out.end(), sys.gpu_designs.begin(), sys.gpu_designs.end());
  return out;
}

BaselineResult greedy_baseline(const Evaluator& ev) {
  const Workload& w = ev.workload();
  const std::vector<int> designs = baseline_device_designs(ev.system());
  BaselineResult r;
  r.name = "greedy";
  Mapping m;
  for (std::size_t d = 0; d < designs.size(); ++d) {
    m.groups.push_back({designs[d], 1, static_cast<int>(d)});
  }
  m.group_of.assign(w.layers.size(), 0);
  m.strategy.assign(w.layers.size(), Strategy::None);
  std::vector<double> free_at(designs.size(), 0), finish(w.layers.size(), 0);
  for (int l : ev.order()) {
    double ready = 0;
    for (int u : w.layers[l].preds) ready = std::max(ready, finish[u]);
    int best = -1;
    double best_t = 0;
    for (std::size_t d = 0; d < designs.size(); ++d) {
      const double c = ev.compute_seconds(l, designs[d], 1, Strategy::None);
      if (c < 0) continue;
      const double t = std::max(ready, free_at[d]) + c;
      if (best < 0 || t < best_t) {
        best = static_cast<int>(d);
        best_t = t;
      }
    }
    if (best < 0) {
      r.note = "layer '" + w.layers[l].name + "' runs on none of the baseline devices";
      return r;
    }
    m.group_of[l] = best;
    free_at[best] = finish[l] = best_t;
  }
  r.available = true;
  r.latency = ev.makespan(m);
  r.mapping = m;
  return r;
}

}  // namespace orchid::mapping
