// H2H (Zhang et al., DAC 2022) re-implemented from its published description and the
// behaviour of its public code: the four steps, on H2H's own host-link cost model.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "mapping/baselines.hpp"
#include "util/error.hpp"

namespace orchid::mapping {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct State {
  std::vector<int> device_of;
  std::vector<std::vector<int>> queue;  // per device, execution order
  std::vector<bool> bound;
  std::vector<XferFlags> flags;
  std::vector<double> start, end;
};

struct Context {
  const Evaluator& ev;
  const Workload& w;
  std::vector<int> designs;  // per device
  double host_gbs;

  double latency(int l, int dev, XferFlags f) const {
    const Design& d = ev.system().designs[designs[dev]];
    const double c = default_cost_provider().compute_seconds(w.layers[l], d);
    if (c < 0) return kInf;
    return c + host_transfer_seconds(d, w.layers[l], f, host_gbs);
  }
  // H2H maps a layer only onto accelerators of its own class (CNN, FC, LSTM); where the
  // system has none of that class, any design that supports the layer will do.
  static const char* layer_class(LayerKind k) {
    switch (k) {
      case LayerKind::Conv:
        return "CNN";
      case LayerKind::Fc:
      case LayerKind::MatMul:
        return "FC";
      case LayerKind::Lstm:
        return "LSTM";
      default:
        return "";
    }
  }
  bool runs(int l, int dev) const {
    const Design& d = ev.system().designs[designs[dev]];
    if (!d.supports_kind(w.layers[l].kind)) return false;
    const std::string cls = layer_class(w.layers[l].kind);
    if (cls.empty() || d.type == cls) return true;
    for (int other : designs) {
      const Design& o = ev.system().designs[other];
      if (o.type == cls && o.supports_kind(w.layers[l].kind)) return false;
    }
    return true;
  }
};

// Start every layer as early as its device queue and its inputs allow. False when the
// queues and the DAG together have a cycle.
bool compact(const Context& cx, State& s) {
  const int n = static_cast<int>(cx.w.layers.size());
  std::vector<int> pos(n, 0), prev(n, -1);
  for (const auto& q : s.queue) {
    for (std::size_t i = 0; i < q.size(); ++i) {
      pos[q[i]] = static_cast<int>(i);
      prev[q[i]] = i == 0 ? -1 : q[i - 1];
    }
  }
  std::vector<bool> done(n, false);
  std::vector<std::size_t> head(s.queue.size(), 0);
  int left = n;
  bool progress = true;
  while (left > 0 && progress) {
    progress = false;
    for (std::size_t d = 0; d < s.queue.size(); ++d) {
      while (head[d] < s.queue[d].size()) {
        const int l = s.queue[d][head[d]];
        bool ready = true;
        double t = prev[l] >= 0 ? s.end[prev[l]] : 0;
        for (int u : cx.w.layers[l].preds) {
          if (!done[u]) {
            ready = false;
            break;
          }
          t = std::max(t, s.end[u]);
        }
        if (!ready) break;
        s.start[l] = t;
        s.end[l] = t + cx.latency(l, static_cast<int>(d), s.flags[l]);
        done[l] = true;
        ++head[d];
        --left;
        progress = true;
      }
    }
  }
  return left == 0;
}

double makespan(const State& s) {
  double m = 0;
  for (double e : s.end) m = std::max(m, e);
  return m;
}

// Step 2: per device, a 0/1 knapsack over the weights of its layers (value = size), in
// units of 1000 elements as the H2H code does; chosen layers skip the weight transfer.
void weight_locality(const Context& cx, State& s) {
  for (std::size_t d = 0; d < s.queue.size(); ++d) {
    const Design& des = cx.ev.system().designs[cx.designs[d]];
    const double cap_elems = des.dram_gb * des.weight_fraction * 8e9 / des.dtype_bits;
    const int cap = static_cast<int>(std::ceil(cap_elems / 1000));
    const auto& q = s.queue[d];
    std::vector<int> v(q.size());
    long total = 0;
    for (std::size_t i = 0; i < q.size(); ++i) {
      v[i] = static_cast<int>(std::ceil(cx.w.layers[q[i]].weight_elements() / 1000));
      total += v[i];
    }
    std::vector<bool> take(q.size(), false);
    if (total <= cap) {
      for (std::size_t i = 0; i < q.size(); ++i) take[i] = v[i] > 0;
    } else {
      std::vector<long> best(cap + 1, 0);
      std::vector<std::vector<bool>> keep(q.size(), std::vector<bool>(cap + 1, false));
      for (std::size_t i = 0; i < q.size(); ++i) {
        for (int c = cap; c >= v[i] && v[i] > 0; --c) {
          if (best[c - v[i]] + v[i] > best[c]) {
            best[c] = best[c - v[i]] + v[i];
            keep[i][c] = true;
          }
        }
      }
      int c = cap;
      for (std::size_t i = q.size(); i-- > 0;) {
        if (keep[i][c]) {
          take[i] = true;
          c -= v[i];
        }
      }
    }
    for (std::size_t i = 0; i < q.size(); ++i) {
      s.bound[q[i]] = take[i];
      s.flags[q[i]].weights = !take[i];
    }
  }
}

// Step 3: the OFM of a layer and the IFM of the next layer of its modality stay in
// device DRAM when the two run back to back on one device.
void activation_locality(const Context& cx, State& s) {
  auto follows = [&](int a, int b) {
    const Layer& x = cx.w.layers[a];
    const Layer& y = cx.w.layers[b];
    return x.modality == y.modality && x.index + 1 == y.index;
  };
  for (const auto& q : s.queue) {
    for (std::size_t i = 0; i < q.size(); ++i) {
      s.flags[q[i]].ifm = !(i > 0 && follows(q[i - 1], q[i]));
      s.flags[q[i]].ofm = !(i + 1 < q.size() && follows(q[i], q[i + 1]));
    }
  }
}

bool steps_2_3(const Context& cx, State& s) {
  for (auto& f : s.flags) f = XferFlags{};
  weight_locality(cx, s);
  activation_locality(cx, s);
  return compact(cx, s);
}

// H2H's per-type order: CNN, LSTM, FC (matmul and cheap layers follow FC here).
constexpr LayerKind kTypeOrder[] = {LayerKind::Conv, LayerKind::Lstm, LayerKind::Fc,
                                    LayerKind::MatMul, LayerKind::Cheap};

// Step 1 for one type on the current frontier: try every choice of layers and
// devices the H2H code tries and keep the least running makespan.
void map_type(const Context& cx, State& s, std::vector<double>& busy,
              const std::vector<int>& layers, const std::vector<int>& accs) {
  const int a = static_cast<int>(accs.size());
  const int f = static_cast<int>(layers.size());
  const int pick = a > f ? f : a;  // layers placed this round
  // Count candidates: C(f, pick) * a^pick; fall back to one layer at a time if huge.
  double count = std::pow(static_cast<double>(a), pick);
  for (int i = 0; i < pick; ++i) count *= static_cast<double>(f - i) / (i + 1);
  auto pred_end = [&](int l) {
    double t = 0;
    for (int u : cx.w.layers[l].preds) t = std::max(t, s.end[u]);
    return t;
  };
  auto place = [&](int l, int dev, std::vector<double>& b) {
    const double st = std::max(b[dev], pred_end(l));
    const double en = st + cx.latency(l, dev, XferFlags{});
    b[dev] = en;
    return std::make_pair(st, en);
  };
  auto commit = [&](const std::vector<int>& ls, const std::vector<int>& ds) {
    for (std::size_t i = 0; i < ls.size(); ++i) {
      auto [st, en] = place(ls[i], ds[i], busy);
      s.start[ls[i]] = st;
      s.end[ls[i]] = en;
      s.device_of[ls[i]] = ds[i];
      s.queue[ds[i]].push_back(ls[i]);
    }
  };
  if (count > 20000) {
    // Beyond what enumeration can afford: the same criterion, one layer at a time.
    std::vector<int> ls(layers.begin(), layers.begin() + pick);
    for (int l : ls) {
      int best = -1;
      double best_t = kInf;
      for (int dev : accs) {
        std::vector<double> b = busy;
        place(l, dev, b);
        const double t = *std::max_element(b.begin(), b.end());
        if (t < best_t) {
          best_t = t;
          best = dev;
        }
      }
      commit({l}, {best});
    }
    return;
  }
  std::vector<int> comb(pick);
  for (int i = 0; i < pick; ++i) comb[i] = i;
  double best_t = kInf;
  std::vector<int> best_l, best_d;
  while (true) {
    std::vector<int> digits(pick, 0);
    while (true) {
      std::vector<double> b = busy;
      for (int i = 0; i < pick; ++i) place(layers[comb[i]], accs[digits[i]], b);
      const double t = *std::max_element(b.begin(), b.end());
      if (t < best_t) {
        best_t = t;
        best_l.clear();
        best_d.clear();
        for (int i = 0; i < pick; ++i) {
          best_l.push_back(layers[comb[i]]);
          best_d.push_back(accs[digits[i]]);
        }
      }
      int i = pick - 1;
      while (i >= 0 && ++digits[i] == a) digits[i--] = 0;
      if (i < 0) break;
    }
    int i = pick - 1;
    while (i >= 0 && comb[i] == f - pick + i) --i;
    if (i < 0) break;
    ++comb[i];
    for (int j = i + 1; j < pick; ++j) comb[j] = comb[j - 1] + 1;
  }
  commit(best_l, best_d);
}

}  // namespace

H2HResult h2h_baseline(const Evaluator& ev) {
  const Workload& w = ev.workload();
  Context cx{ev, w, baseline_device_designs(ev.system()), ev.system().host_gbs};
  const int n = static_cast<int>(w.layers.size());
  const int devices = static_cast<int>(cx.designs.size());
  H2HResult out;
  out.result.name = "H2H";
  State s;
  s.device_of.assign(n, -1);
  s.queue.assign(devices, {});
  s.bound.assign(n, false);
  s.flags.assign(n, XferFlags{});
  s.start.assign(n, 0);
  s.end.assign(n, 0);

  // Step 1: computation-prioritised mapping of the ready frontier, type by type.
  std::vector<double> busy(devices, 0);
  std::vector<bool> mapped(n, false);
  int left = n;
  while (left > 0) {
    std::vector<int> frontier;
    for (int l = 0; l < n; ++l) {
      if (mapped[l]) continue;
      bool ready = true;
      for (int u : w.layers[l].preds) ready &= mapped[u];
      if (ready) frontier.push_back(l);
    }
    for (LayerKind kind : kTypeOrder) {
      std::vector<int> layers;
      for (int l : frontier) {
        if (w.layers[l].kind == kind) layers.push_back(l);
      }
      if (layers.empty()) continue;
      std::vector<int> accs;
      for (int d = 0; d < devices; ++d) {
        if (cx.runs(layers[0], d)) accs.push_back(d);
      }
      if (accs.empty()) {
        out.result.note = fmt::format("no baseline device runs {} layers (e.g. '{}')",
                                      kind_name(kind), w.layers[layers[0]].name);
        return out;
      }
      map_type(cx, s, busy, layers, accs);
      for (int l : layers) {
        if (s.device_of[l] >= 0 && !mapped[l]) {
          mapped[l] = true;
          --left;
        }
      }
    }
  }
  out.step_makespan[0] = makespan(s);
  // Step 2: weight locality.
  weight_locality(cx, s);
  compact(cx, s);
  out.step_makespan[1] = makespan(s);
  // Step 3: activation locality.
  activation_locality(cx, s);
  compact(cx, s);
  out.step_makespan[2] = makespan(s);
  // Step 4: move layers next to a neighbour of the same type on another device, two
  // passes from the first layer of every modality (latest-finishing first).
  double best = out.step_makespan[2];
  std::vector<int> modalities;
  for (const Layer& l : w.layers) {
    if (std::find(modalities.begin(), modalities.end(), l.modality) == modalities.end()) {
      modalities.push_back(l.modality);
    }
  }
  auto last_end = [&](int mod) {
    double t = 0;
    for (int l = 0; l < n; ++l) {
      if (w.layers[l].modality == mod) t = std::max(t, s.end[l]);
    }
    return t;
  };
  std::stable_sort(modalities.begin(), modalities.end(),
                   [&](int a, int b) { return last_end(a) > last_end(b); });
  for (int pass = 0; pass < 2; ++pass) {
    for (int mod : modalities) {
      for (int l = 0; l < n; ++l) {
        if (w.layers[l].modality != mod) continue;
        std::vector<std::pair<int, bool>> neighbours;  // (layer, is predecessor)
        for (int u : w.layers[l].preds) neighbours.push_back({u, true});
        for (int v : w.layers[l].succs) neighbours.push_back({v, false});
        for (auto [nb, is_pred] : neighbours) {
          const int target = s.device_of[nb];
          if (target == s.device_of[l] || w.layers[nb].kind != w.layers[l].kind ||
              !cx.runs(l, target)) {
            continue;
          }
          State trial = s;
          auto& from = trial.queue[trial.device_of[l]];
          from.erase(std::find(from.begin(), from.end(), l));
          auto& to = trial.queue[target];
          auto at = std::find(to.begin(), to.end(), nb);
          to.insert(is_pred ? at + 1 : at, l);
          trial.device_of[l] = target;
          if (!steps_2_3(cx, trial)) continue;
          const double t = makespan(trial);
          if (t < best) {
            best = t;
            s = std::move(trial);
          }
        }
      }
    }
  }
  out.step_makespan[3] = makespan(s);
  out.device_of = s.device_of;
  out.bound = s.bound;
  out.start = s.start;
  out.end = s.end;
  // The same placement under the common evaluator (each device its own group).
  Mapping m;
  for (int d = 0; d < devices; ++d) m.groups.push_back({cx.designs[d], 1, d});
  m.group_of = s.device_of;
  m.strategy.assign(n, Strategy::None);
  out.result.mapping = m;
  out.result.latency = ev.makespan(m);
  out.result.available = true;
  out.result.note = fmt::format("own model, steps 1-4: {:.6f} {:.6f} {:.6f} {:.6f} ms",
                                out.step_makespan[0] * 1e3, out.step_makespan[1] * 1e3,
                                out.step_makespan[2] * 1e3, out.step_makespan[3] * 1e3);
  return out;
}

}  // namespace orchid::mapping
