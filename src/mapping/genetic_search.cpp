// Two-level GA over groups/designs/placement (outer) and sharding (inner).
#include "mapping/genetic_search.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>

#include <fmt/format.h>

#include "util/random.hpp"

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
  const double bw = ev.system().intra_group_gbs;
  std::vector<Strategy> out(w.layers.size(), Strategy::None);
  std::vector<Layout> layout(w.layers.size(), Layout::Single);
  for (int l : ev.order()) {
    const Group& g = m.groups[m.group_of[l]];
    double best = -1;
    for (int si = 0; si < kStrategies; ++si) {
      const Strategy s = static_cast<Strategy>(si);
      const double comp = ev.compute_seconds(l, g.design, g.size, s);
      if (comp < 0) continue;
      double t = comp + ev.comm_seconds(l, g.size, s);
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

namespace {

// Outer chromosome. Slots 0..fpga_slots-1 are FPGA groups (size may be 0); GPU groups
// follow with fixed sizes. unit_slot places each run of layers.
struct Outer {
  std::vector<int> size;
  std::vector<int> design;  // index into fpga_designs
  std::vector<int> unit_slot;
};

struct Problem {
  const Evaluator& ev;
  std::vector<int> fpga_designs;                // System::designs indices
  std::vector<std::pair<int, int>> gpu_groups;  // (design, size)
  int fpga_slots = 0;
  int fpga_devices = 0;
  std::vector<std::vector<int>> units;  // layer runs
  std::vector<int> unit_of;
  int slots() const { return fpga_slots + static_cast<int>(gpu_groups.size()); }
};

struct Inner {
  double latency = 0;
  std::vector<Strategy> strategy;
};

// Outer individual -> mapping without strategies; `key` identifies it for the memo.
Mapping decode(const Problem& pb, const Outer& o, std::vector<int>& key) {
  Mapping m;
  std::vector<int> slot_group(pb.slots(), -1);
  int device = 0;
  for (int s = 0; s < pb.fpga_slots; ++s) {
    if (o.size[s] <= 0) continue;
    slot_group[s] = static_cast<int>(m.groups.size());
    m.groups.push_back({pb.fpga_designs[o.design[s]], o.size[s], device});
    device += o.size[s];
  }
  for (std::size_t j = 0; j < pb.gpu_groups.size(); ++j) {
    slot_group[pb.fpga_slots + j] = static_cast<int>(m.groups.size());
    m.groups.push_back({pb.gpu_groups[j].first, pb.gpu_groups[j].second, device});
    device += pb.gpu_groups[j].second;
  }
  const int layers = static_cast<int>(pb.unit_of.size());
  m.group_of.assign(layers, 0);
  for (int l = 0; l < layers; ++l) {
    const int g = supporting_group(pb.ev, m.groups, l, slot_group[o.unit_slot[pb.unit_of[l]]]);
    m.group_of[l] = g < 0 ? 0 : g;
  }
  // Drop groups nobody uses from the key only; they still hold their devices.
  key.clear();
  for (const Group& g : m.groups) {
    key.push_back(g.design);
    key.push_back(g.size);
  }
  key.push_back(-1);
  key.insert(key.end(), m.group_of.begin(), m.group_of.end());
  return m;
}

std::uint64_t hash_key(const std::vector<int>& key) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (int v : key) {
    h ^= static_cast<std::uint64_t>(static_cast<std::uint32_t>(v)) + 0x9e3779b97f4a7c15ull;
    h *= 0x100000001b3ull;
    h ^= h >> 29;
  }
  return h;
}

// Inner GA: strategies per layer for a fixed placement.
Inner inner_search(const Evaluator& ev, Mapping m, const SearchOptions& opt, std::uint64_t seed) {
  const int layers = static_cast<int>(m.group_of.size());
  SplitMix64 rng(seed);
  std::vector<std::vector<Strategy>> choices(layers);
  std::vector<int> free_layers;  // layers with more than one valid strategy
  for (int l = 0; l < layers; ++l) {
    const Group& g = m.groups[m.group_of[l]];
    for (int s = 0; s < kStrategies; ++s) {
      if (ev.valid(l, g.design, g.size, static_cast<Strategy>(s))) {
        choices[l].push_back(static_cast<Strategy>(s));
      }
    }
    if (choices[l].empty()) choices[l].push_back(Strategy::None);
    if (choices[l].size() > 1) free_layers.push_back(l);
  }
  auto eval = [&](const std::vector<Strategy>& st) {
    m.strategy = st;
    return ev.makespan(m);
  };
  std::vector<std::vector<Strategy>> pop;
  pop.push_back(greedy_sharding(ev, m));
  for (Strategy pref : {Strategy::Batch, Strategy::OutChannel, Strategy::Spatial}) {
    std::vector<Strategy> st = pop[0];
    for (int l : free_layers) {
      if (std::find(choices[l].begin(), choices[l].end(), pref) != choices[l].end()) st[l] = pref;
    }
    pop.push_back(st);
  }
  Inner best{eval(pop[0]), pop[0]};
  if (free_layers.empty()) return best;
  while (static_cast<int>(pop.size()) < opt.inner_population) {
    std::vector<Strategy> st = pop[0];
    for (int l : free_layers) {
      if (rng.below(4) == 0) st[l] = choices[l][rng.below(choices[l].size())];
    }
    pop.push_back(st);
  }
  std::vector<double> fit(pop.size());
  for (std::size_t i = 0; i < pop.size(); ++i) {
    fit[i] = eval(pop[i]);
    if (fit[i] < best.latency) best = {fit[i], pop[i]};
  }
  const double mutate = std::min(0.5, 2.0 / free_layers.size());
  int stale = 0;
  for (int gen = 0; gen < opt.inner_generations && stale < 3; ++gen) {
    std::vector<std::vector<Strategy>> next;
    next.push_back(best.strategy);
    auto pick = [&]() {
      const std::size_t a = rng.below(pop.size()), b = rng.below(pop.size());
      return fit[a] <= fit[b] ? a : b;
    };
    while (next.size() < pop.size()) {
      const auto& pa = pop[pick()];
      const auto& pbv = pop[pick()];
      std::vector<Strategy> child = pa;
      for (int l : free_layers) {
        if (rng.below(2)) child[l] = pbv[l];
        if (rng.uniform01() < mutate) {
          const auto& preds = ev.workload().layers[l].preds;
          if (!preds.empty() && rng.below(2) && m.group_of[preds[0]] == m.group_of[l] &&
              std::find(choices[l].begin(), choices[l].end(), child[preds[0]]) !=
                  choices[l].end()) {
            child[l] = child[preds[0]];  // copy the neighbour: no resharding between them
          } else {
            child[l] = choices[l][rng.below(choices[l].size())];
          }
        }
      }
      next.push_back(std::move(child));
    }
    pop = std::move(next);
    const double before = best.latency;
    for (std::size_t i = 0; i < pop.size(); ++i) {
      fit[i] = eval(pop[i]);
      if (fit[i] < best.latency) best = {fit[i], pop[i]};
    }
    stale = best.latency < before * (1 - 1e-9) ? 0 : stale + 1;
  }
  return best;
}

double work_of(const Evaluator& ev, int layer, int design) {
  const double t = ev.compute_seconds(layer, design, 1, Strategy::None);
  return t < 0 ? 1e30 : t;
}

}  // namespace

SearchResult genetic_search(const Evaluator& ev, const SearchOptions& opt,
                            const ProgressFn& progress) {
  const auto t_begin = std::chrono::steady_clock::now();
  const System& sys = ev.system();
  const Workload& w = ev.workload();
  Problem pb{ev, {}, {}, 0, sys.fpga_devices, {}, {}};
  for (std::size_t d = 0; d < sys.designs.size(); ++d) {
    if (!sys.designs[d].is_gpu) pb.fpga_designs.push_back(static_cast<int>(d));
  }
  {
    std::map<int, int> gpu_count;
    for (int d : sys.gpu_designs) ++gpu_count[d];
    for (auto [d, c] : gpu_count) pb.gpu_groups.push_back({d, c});
  }
  pb.fpga_slots = pb.fpga_designs.empty() ? 0 : std::min(sys.fpga_devices, opt.max_groups);
  // Layer runs: consecutive layers (list order) of one modality, at most ~40 runs.
  const int layers = static_cast<int>(w.layers.size());
  const int run = std::max(1, (layers + 39) / 40);
  pb.unit_of.assign(layers, 0);
  for (int l = 0; l < layers; ++l) {
    if (pb.units.empty() || static_cast<int>(pb.units.back().size()) >= run ||
        w.layers[pb.units.back().back()].modality != w.layers[l].modality) {
      pb.units.emplace_back();
    }
    pb.units.back().push_back(l);
    pb.unit_of[l] = static_cast<int>(pb.units.size()) - 1;
  }
  const int units = static_cast<int>(pb.units.size());
  const int slots = pb.slots();
  const int nd = static_cast<int>(pb.fpga_designs.size());
  SplitMix64 rng(opt.seed * 0x2545f4914f6cdd1dull + 17);

  // Best FPGA design for a set of layers (least total single-device time).
  auto best_design_for = [&](const std::vector<int>& ls) {
    int best = 0;
    double best_t = 1e300;
    for (int d = 0; d < nd; ++d) {
      double t = 0;
      for (int l : ls) t += work_of(ev, l, pb.fpga_designs[d]);
      if (t < best_t) {
        best_t = t;
        best = d;
      }
    }
    return best;
  };
  auto blank = [&]() {
    Outer o;
    o.size.assign(pb.fpga_slots, 0);
    o.design.assign(pb.fpga_slots, 0);
    o.unit_slot.assign(units, 0);
    return o;
  };
  // Split `devices` over `parts` in proportion to `weights`, every part at least one.
  auto apportion = [&](const std::vector<double>& weights, int devices) {
    const int parts = static_cast<int>(weights.size());
    std::vector<int> out(parts, 1);
    int left = devices - parts;
    const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
    for (int i = 0; i < parts && left > 0; ++i) {
      const int extra = std::min(left, static_cast<int>(weights[i] / total * (devices - parts)));
      out[i] += extra;
      left -= extra;
    }
    for (int i = 0; left > 0; i = (i + 1) % parts, --left) ++out[i];
    return out;
  };

  // Which layer kinds occur, and which FPGA designs can run every one of them.
  std::vector<std::vector<int>> by_kind(kLayerKinds);
  for (int l = 0; l < layers; ++l) by_kind[static_cast<int>(w.layers[l].kind)].push_back(l);
  auto runs_all = [&](int d, const std::vector<int>& ls) {
    for (int l : ls) {
      if (!sys.designs[pb.fpga_designs[d]].supports_kind(w.layers[l].kind)) return false;
    }
    return true;
  };
  // Units go to the group whose design does their work fastest.
  auto place_units = [&](Outer& o) {
    for (int u = 0; u < units; ++u) {
      int best = 0;
      double best_t = 1e300;
      for (int sl = 0; sl < pb.fpga_slots; ++sl) {
        if (o.size[sl] <= 0) continue;
        double t = 0;
        for (int l : pb.units[u]) t += work_of(ev, l, pb.fpga_designs[o.design[sl]]);
        if (t < best_t) {
          best_t = t;
          best = sl;
        }
      }
      o.unit_slot[u] = best;
    }
  };
  std::vector<Outer> pop;
  auto add_seed = [&](const Outer& o) {
    for (const Outer& q : pop) {
      if (q.size == o.size && q.design == o.design && q.unit_slot == o.unit_slot) return;
    }
    pop.push_back(o);
  };
  if (pb.fpga_slots > 0) {
    std::vector<int> all(layers);
    std::iota(all.begin(), all.end(), 0);
    // Homogeneous: one group of every device, the best design first, then every other
    // design that runs the whole workload (the data-parallel baseline's search space,
    // so with all-batch inner seeds the GA starts from that baseline's plan).
    Outer one = blank();
    one.size[0] = sys.fpga_devices;
    one.design[0] = best_design_for(all);
    add_seed(one);
    for (int d = 0; d < nd; ++d) {
      if (!runs_all(d, all)) continue;
      one.design[0] = d;
      add_seed(one);
    }
    // Heterogeneous by kind: the best design of every heavy kind, kinds that share a
    // best design sharing its group, groups sized by their work.
    std::vector<int> kind_design;
    std::vector<double> design_work;
    for (int k = 0; k < kLayerKinds; ++k) {
      if (by_kind[k].empty() || k == static_cast<int>(LayerKind::Cheap)) continue;
      const int d = best_design_for(by_kind[k]);
      double t = 0;
      for (int l : by_kind[k]) t += work_of(ev, l, pb.fpga_designs[d]);
      const auto it = std::find(kind_design.begin(), kind_design.end(), d);
      if (it == kind_design.end()) {
        kind_design.push_back(d);
        design_work.push_back(t);
      } else {
        design_work[it - kind_design.begin()] += t;
      }
    }
    if (kind_design.size() > 1 && static_cast<int>(kind_design.size()) <= pb.fpga_slots &&
        static_cast<int>(kind_design.size()) <= sys.fpga_devices) {
      Outer o = blank();
      const auto sz = apportion(design_work, sys.fpga_devices);
      for (std::size_t i = 0; i < kind_design.size(); ++i) {
        o.design[i] = kind_design[i];
        o.size[i] = sz[i];
      }
      place_units(o);
      add_seed(o);
    }
    // Main + side: a main design and, for the layers it cannot run, the best design for
    // those on a small side group (1 device, a quarter, half).
    for (int d = 0; d < nd && pb.fpga_slots > 1 && sys.fpga_devices > 1; ++d) {
      std::vector<int> missing;
      double main_work = 0;
      for (int l = 0; l < layers; ++l) {
        if (sys.designs[pb.fpga_designs[d]].supports_kind(w.layers[l].kind))
          main_work += work_of(ev, l, pb.fpga_designs[d]);
        else
          missing.push_back(l);
      }
      if (missing.empty() || main_work == 0) continue;
      const int side = best_design_for(missing);
      if (!runs_all(side, missing)) continue;
      for (int s : {1, sys.fpga_devices / 4, sys.fpga_devices / 2}) {
        if (s < 1 || s >= sys.fpga_devices) continue;
        Outer o = blank();
        o.size[0] = sys.fpga_devices - s;
        o.design[0] = d;
        o.size[1] = s;
        o.design[1] = side;
        place_units(o);
        add_seed(o);
      }
    }
    // One group per modality, sized by work.
    std::map<int, std::vector<int>> by_mod;
    for (int l = 0; l < layers; ++l) by_mod[w.layers[l].modality].push_back(l);
    if (by_mod.size() > 1 && static_cast<int>(by_mod.size()) <= pb.fpga_slots) {
      Outer o = blank();
      std::vector<double> wts;
      std::map<int, int> slot_of;
      int i = 0;
      for (auto& [mod, ls] : by_mod) {
        o.design[i] = best_design_for(ls);
        double t = 0;
        for (int l : ls) t += std::min(work_of(ev, l, pb.fpga_designs[o.design[i]]), 1e3);
        wts.push_back(t);
        slot_of[mod] = i++;
      }
      const auto sz = apportion(wts, sys.fpga_devices);
      for (std::size_t j = 0; j < sz.size(); ++j) o.size[j] = sz[j];
      for (int u = 0; u < units; ++u) o.unit_slot[u] = slot_of[w.layers[pb.units[u][0]].modality];
      add_seed(o);
    }
  } else {
    pop.push_back(blank());
  }
  while (static_cast<int>(pop.size()) < opt.population) {
    Outer o = blank();
    if (pb.fpga_slots > 0) {
      const int used = 1 + static_cast<int>(rng.below(pb.fpga_slots));
      for (int d = 0; d < sys.fpga_devices; ++d) ++o.size[rng.below(used)];
      for (int s = 0; s < pb.fpga_slots; ++s) o.design[s] = static_cast<int>(rng.below(nd));
    }
    const Outer& base = pop[rng.below(pop.size())];
    o.unit_slot = base.unit_slot;
    for (int u = 0; u < units; ++u) {
      if (rng.below(3) == 0) o.unit_slot[u] = static_cast<int>(rng.below(slots));
    }
    pop.push_back(o);
  }

  std::mutex memo_mutex;
  std::unordered_map<std::uint64_t, std::pair<std::vector<int>, Inner>> memo;
  std::atomic<std::size_t> hits{0}, runs{0};
  auto evaluate = [&](const Outer& o, Mapping& mapping_out) {
    std::vector<int> key;
    Mapping m = decode(pb, o, key);
    const std::uint64_t h = hash_key(key);
    {
      std::lock_guard<std::mutex> lock(memo_mutex);
      auto it = memo.find(h);
      if (it != memo.end() && it->second.first == key) {
        ++hits;
        m.strategy = it->second.second.strategy;
        mapping_out = std::move(m);
        return it->second.second.latency;
      }
    }
    ++runs;
    Inner in = inner_search(ev, m, opt, opt.seed ^ h);
    m.strategy = in.strategy;
    mapping_out = m;
    std::lock_guard<std::mutex> lock(memo_mutex);
    memo.emplace(h, std::make_pair(key, in));
    return in.latency;
  };
  const int threads = std::max(
      1, opt.threads > 0 ? opt.threads : static_cast<int>(std::thread::hardware_concurrency()));
  auto evaluate_all = [&](const std::vector<Outer>& ps, std::vector<double>& fit,
                          std::vector<Mapping>& maps) {
    fit.assign(ps.size(), 0);
    maps.assign(ps.size(), {});
    std::atomic<std::size_t> next{0};
    // Past the time limit the rest stay unevaluated (infinitely slow), so one generation
    // of a huge workload cannot overrun it; the first is always evaluated.
    auto worker = [&]() {
      for (std::size_t i; (i = next++) < ps.size();) {
        const bool late =
            i > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - t_begin)
                             .count() >= opt.time_limit_s;
        fit[i] = late ? std::numeric_limits<double>::infinity() : evaluate(ps[i], maps[i]);
      }
    };
    std::vector<std::thread> pool;
    const int workers = std::min<int>(threads, static_cast<int>(ps.size()));
    for (int t = 1; t < workers; ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
  };
  auto elapsed = [&]() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_begin).count();
  };

  std::vector<double> fit;
  std::vector<Mapping> maps;
  evaluate_all(pop, fit, maps);
  SearchResult result;
  Outer best_outer = pop[0];
  auto take_best = [&]() {
    for (std::size_t i = 0; i < pop.size(); ++i) {
      if (maps[i].groups.empty()) continue;  // not evaluated (time limit)
      if (result.mapping.groups.empty() || fit[i] < result.latency) {
        result.latency = fit[i];
        result.mapping = maps[i];
        best_outer = pop[i];
      }
    }
  };
  take_best();
  int stale = 0;
  int gen = 0;
  for (; gen < opt.generations && stale < opt.stagnation && elapsed() < opt.time_limit_s; ++gen) {
    std::vector<std::size_t> rank(pop.size());
    std::iota(rank.begin(), rank.end(), 0);
    std::stable_sort(rank.begin(), rank.end(), [&](auto a, auto b) { return fit[a] < fit[b]; });
    std::vector<Outer> next;
    for (int e = 0; e < 2 && e < static_cast<int>(rank.size()); ++e) next.push_back(pop[rank[e]]);
    auto tournament = [&]() {
      std::size_t best = rng.below(pop.size());
      for (int k = 0; k < 2; ++k) {
        const std::size_t c = rng.below(pop.size());
        if (fit[c] < fit[best]) best = c;
      }
      return best;
    };
    while (next.size() < pop.size()) {
      const Outer& a = pop[tournament()];
      const Outer& b = pop[tournament()];
      Outer child = a;
      if (rng.uniform01() < 0.9) {
        if (rng.below(2)) child.size = b.size;  // sizes travel whole: the sum stays n
        for (int s = 0; s < pb.fpga_slots; ++s) {
          if (rng.below(2)) child.design[s] = b.design[s];
        }
        // Two-point crossover keeps runs of neighbouring layers together.
        std::size_t lo = rng.below(units), hi = rng.below(units);
        if (lo > hi) std::swap(lo, hi);
        for (std::size_t u = lo; u <= hi; ++u) child.unit_slot[u] = b.unit_slot[u];
      }
      if (pb.fpga_slots > 1 && rng.uniform01() < 0.4) {
        const int from = static_cast<int>(rng.below(pb.fpga_slots));
        const int to = static_cast<int>(rng.below(pb.fpga_slots));
        if (child.size[from] > 0 && from != to) {
          const int moved = 1 + static_cast<int>(rng.below(child.size[from]));
          child.size[from] -= moved;
          child.size[to] += moved;
        }
      }
      for (int s = 0; s < pb.fpga_slots; ++s) {
        if (rng.uniform01() < 0.1) child.design[s] = static_cast<int>(rng.below(nd));
      }
      const double pm = std::min(0.3, 2.0 / units);
      for (int u = 0; u < units; ++u) {
        if (rng.uniform01() >= pm) continue;
        if (rng.below(2) && u > 0)
          child.unit_slot[u] = child.unit_slot[u - 1];
        else if (rng.below(2) && u + 1 < units)
          child.unit_slot[u] = child.unit_slot[u + 1];
        else
          child.unit_slot[u] = static_cast<int>(rng.below(slots));
      }
      next.push_back(std::move(child));
    }
    pop = std::move(next);
    const double before = result.latency;
    evaluate_all(pop, fit, maps);
    take_best();
    stale = result.latency < before * (1 - 1e-9) ? 0 : stale + 1;
    if (progress) {
      progress(fmt::format("gen {:3d}  best {:.4f} ms  sharded {} memo hits {}  {:.1f} s", gen + 1,
                           result.latency * 1e3, runs.load(), hits.load(), elapsed()));
    }
  }
  result.generations = gen;
  // Steepest-descent local search around the best individual; every neighbour gets its
  // own inner sharding search (memoised like the GA's).
  for (int pass = 0;
       opt.local_search && pb.fpga_slots > 0 && pass < 50 && elapsed() < opt.time_limit_s; ++pass) {
    std::vector<Outer> moves;
    const Outer& cur = best_outer;
    for (int a = 0; a < pb.fpga_slots; ++a) {
      if (cur.size[a] <= 0) continue;
      for (int b = 0; b < pb.fpga_slots; ++b) {
        if (b == a) continue;
        Outer o = cur;  // one device from group a to group b (a new group if b is empty)
        --o.size[a];
        ++o.size[b];
        if (cur.size[b] == 0) {
          for (int d = 0; d < nd; ++d) {
            o.design[b] = d;
            moves.push_back(o);
          }
        } else {
          moves.push_back(o);
        }
      }
      for (int d = 0; d < nd; ++d) {
        if (d == cur.design[a]) continue;
        Outer o = cur;
        o.design[a] = d;
        moves.push_back(o);
      }
    }
    for (int u = 0; u < units; ++u) {
      for (int sl = 0; sl < slots; ++sl) {
        if (sl == cur.unit_slot[u] || (sl < pb.fpga_slots && cur.size[sl] <= 0)) continue;
        Outer o = cur;
        o.unit_slot[u] = sl;
        moves.push_back(o);
      }
    }
    std::vector<double> mfit;
    std::vector<Mapping> mmaps;
    evaluate_all(moves, mfit, mmaps);
    std::size_t best = moves.size();
    for (std::size_t i = 0; i < moves.size(); ++i) {
      if (mfit[i] < result.latency * (1 - 1e-9) && (best == moves.size() || mfit[i] < mfit[best]))
        best = i;
    }
    if (best == moves.size()) break;
    result.latency = mfit[best];
    result.mapping = mmaps[best];
    best_outer = moves[best];
    ++result.local_moves;
    if (progress) {
      progress(fmt::format("local {:3d}  best {:.4f} ms  {} neighbours  {:.1f} s", pass + 1,
                           result.latency * 1e3, moves.size(), elapsed()));
    }
  }
  // The given complete mappings, as they are and with their sharding searched.
  for (std::size_t i = 0; i < opt.seed_mappings.size(); ++i) {
    const Mapping& given = opt.seed_mappings[i];
    if (given.groups.empty() || given.group_of.size() != w.layers.size()) continue;
    Inner in = inner_search(ev, given, opt, opt.seed ^ (0x51ed270b27e1ull + i));
    const double as_given = ev.makespan(given);
    Mapping m = given;
    double t = in.latency;
    m.strategy = in.strategy;
    if (as_given < t) {
      t = as_given;
      m = given;
    }
    if (t < result.latency * (1 - 1e-12)) {
      result.latency = t;
      result.mapping = m;
      result.from_seed_mapping = static_cast<int>(i);
    }
  }
  result.seconds = elapsed();
  result.inner_runs = runs.load();
  result.memo_hits = hits.load();
  return result;
}

}  // namespace orchid::mapping
