// Helpers the search and the baselines share: greedy sharding of a fixed placement and
// the repair of a layer's placement onto a group whose design supports it.
#include "mapping/genetic_search.hpp"

namespace orchid::mapping {

int supporting_group(const Evaluator& ev, const std::vector<Group>& groups, int layer,
                     int preferred) {
  const Layer& l = ev.workload().layers[layer];
  auto ok = [&](int g) { return ev.system().designs[groups[g].design].supports_kind(l.kind); };
  if (preferred >= 0 && preferred < static_cast<int>(groups.size()) && ok(preferred)) {
    return preferred;
  }
  int best = -1;
  double best_t = 0;
  for (int g = 0; g < static_cast<int>(groups.size()); ++g) {
    if (!ok(g)) continue;
    const double t = ev.compute_seconds(layer, groups[g].design, 1, Strategy::None);
    if (best < 0 || t < best_t) {
      best = g;
      best_t = t;
    }
  }
  return best;
}

std::vector<Strategy> greedy_sharding(const Evaluator& ev, const Mapping& m) {
  const Workload& w = ev.workload();
  const double bpe = ev.bytes_per_element();
  std::vector<Strategy> out(w.layers.size(), Strategy::None);
  std::vector<Layout> layout(w.layers.size(), Layout::Single);
  for (int l : ev.order()) {
    const Group& g = m.groups[m.group_of[l]];
    const double bw = ev.ring_gbs(g);
    double best = -1;
    for (int si = 0; si < kStrategies; ++si) {
      const Strategy s = static_cast<Strategy>(si);
      const double comp = ev.compute_seconds(l, g.design, g.size, s);
      if (comp < 0) continue;
      double t = comp + ev.comm_seconds(l, g.size, s) * (ev.system().intra_group_gbs / bw);
      for (int u : w.layers[l].preds) {
        if (m.group_of[u] != m.group_of[l]) continue;
        t += reshard_seconds(layout[u], input_layout(s, g.size),
                             w.layers[u].output_elements() * bpe, g.size, bw);
      }
      if (best < 0 || t < best - 1e-15) {
        best = t;
        out[l] = s;
      }
    }
    layout[l] = output_layout(out[l], g.size);
  }
  return out;
}

}  // namespace orchid::mapping
