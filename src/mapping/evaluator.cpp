// List scheduling of one inference over a mapping.
#include "mapping/evaluator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

#include <fmt/format.h>

#include "util/error.hpp"

namespace orchid::mapping {

std::vector<bool> knapsack_fill(const std::vector<double>& sizes, double capacity, int units) {
  const std::size_t n = sizes.size();
  std::vector<bool> take(n, false);
  double total = 0;
  for (double s : sizes) total += s;
  if (total <= capacity) {
    for (std::size_t i = 0; i < n; ++i) take[i] = sizes[i] > 0;
    return take;
  }
  if (!(capacity > 0) || units <= 0) return take;
  const double unit = capacity / units;
  // Sizes are compared as doubles before the cast: 1e300 or NaN bytes would not fit an
  // int (undefined behaviour) and could never be taken anyway.
  std::vector<int> w(n, units + 1);
  for (std::size_t i = 0; i < n; ++i) {
    const double units_needed = std::ceil(sizes[i] / unit);
    if (units_needed >= 0 && units_needed <= units) w[i] = static_cast<int>(units_needed);
  }
  // best[c] = most bytes within c units; keep[i][c] records the choice for backtracking.
  std::vector<double> best(units + 1, 0.0);
  std::vector<std::vector<bool>> keep(n, std::vector<bool>(units + 1, false));
  for (std::size_t i = 0; i < n; ++i) {
    if (w[i] > units || !(sizes[i] > 0)) continue;
    for (int c = units; c >= w[i]; --c) {
      const double with = best[c - w[i]] + sizes[i];
      if (with > best[c]) {
        best[c] = with;
        keep[i][c] = true;
      }
    }
  }
  int c = units;
  for (std::size_t i = n; i-- > 0;) {
    if (keep[i][c]) {
      take[i] = true;
      c -= w[i];
    }
  }
  return take;
}

Evaluator::Evaluator(const Workload& workload, const System& system,
                     const LayerCostProvider& provider)
    : workload_(workload), system_(system) {
  designs_ = static_cast<int>(system.designs.size());
  max_p_ = std::max(1, system.total_devices());
  const int layers = static_cast<int>(workload.layers.size());
  // A GPU design only ever forms groups of at most as many devices as carry it, so its
  // costs (orchestrated, hence not free) are tabulated only for those sizes.
  std::vector<int> gpu_count(designs_, 0);
  for (int d : system.gpu_designs) ++gpu_count[d];
  // The cost table has one entry per (layer, design, group size, strategy): bounded, so a
  // huge workload on a huge system is an error rather than hours of tabulating.
  const double entries = static_cast<double>(layers) * designs_ * (max_p_ + 1) * kStrategies;
  if (entries > kMaxTableEntries) {
    fail(
        "workload '{}' ({} layers) on system '{}' ({} devices, {} designs) needs {:.3g} cost "
        "table entries, more than {:.0e}",
        workload.name, layers, system.name, max_p_, designs_, entries, kMaxTableEntries);
  }
  compute_.assign(static_cast<std::size_t>(layers) * designs_ * (max_p_ + 1) * kStrategies, -1);
  comm_.assign(static_cast<std::size_t>(layers) * (max_p_ + 1) * kStrategies, 0);
  for (int l = 0; l < layers; ++l) {
    const Layer& layer = workload.layers[l];
    for (int p = 1; p <= max_p_; ++p) {
      for (int s = 0; s < kStrategies; ++s) {
        const Strategy st = static_cast<Strategy>(s);
        if (!strategy_valid(layer, st, p)) continue;
        const Layer shard = shard_layer(layer, st, p);
        double& comm = comm_[(static_cast<std::size_t>(l) * (max_p_ + 1) + p) * kStrategies + s];
        if (system.cpu_ranks > 0) {
          // A CPU cluster, priced as the plan runner executes it (cpu_cluster_cost.hpp): a
          // layer it cannot split runs whole on the leader.
          const bool split = cpu_runner_splits(layer, st, p);
          comm = cpu_layer_comm_seconds(layer, st, p, system.cpu_network);
          const Design& cpu = system.designs[0];
          const double t = provider.compute_seconds(split ? shard : layer, cpu);
          const int busy = cpu_busy_ranks(layer, st, p);
          compute_[slot(l, 0, p, st)] =
              t < 0 ? t
                    : (t + system.cpu_network.step_s) *
                          cpu_oversubscription(busy * cpu.threads, system.cpu_network);
          continue;
        }
        comm = intra_layer_comm_seconds(layer, st, p, system.intra_group_gbs, bytes_per_element());
        for (int d = 0; d < designs_; ++d) {
          if (system.designs[d].is_gpu && p > std::max(1, gpu_count[d])) continue;
          compute_[slot(l, d, p, st)] = provider.compute_seconds(shard, system.designs[d]);
        }
      }
    }
  }
  // An infeasible mapping is charged kInfeasible seconds; a workload whose layers take
  // longer than that even on their best design would make infeasible mappings win.
  double serial = 0;
  for (int l = 0; l < layers; ++l) {
    double best = std::numeric_limits<double>::infinity();
    for (int d = 0; d < designs_; ++d) {
      const double t = compute_[slot(l, d, 1, Strategy::None)];
      if (t >= 0) best = std::min(best, t);
    }
    if (std::isfinite(best)) serial += best;
    if (std::isnan(best)) serial = best;
  }
  if (!(serial <= kMaxSerialSeconds)) {
    fail(
        "workload '{}' would take {:.3g} s per inference on system '{}' even layer by layer on "
        "the best designs; the mapper ranks plans up to {:.0e} s",
        workload.name, serial, system.name, kMaxSerialSeconds);
  }
  // Priority: longest path to the end, each layer at its best single-device cost.
  std::vector<double> level(layers, 0);
  for (int l = layers - 1; l >= 0; --l) {
    double best = std::numeric_limits<double>::infinity();
    for (int d = 0; d < designs_; ++d) {
      const double t = compute_[slot(l, d, 1, Strategy::None)];
      if (t >= 0) best = std::min(best, t);
    }
    if (!std::isfinite(best)) best = 0;
    double tail = 0;
    for (int s : workload.layers[l].succs) tail = std::max(tail, level[s]);
    level[l] = best + tail;
  }
  std::vector<int> indeg(layers);
  auto lower = [&](int a, int b) { return level[a] < level[b] || (level[a] == level[b] && a > b); };
  std::priority_queue<int, std::vector<int>, decltype(lower)> ready(lower);
  for (int l = 0; l < layers; ++l) {
    indeg[l] = static_cast<int>(workload.layers[l].preds.size());
    if (indeg[l] == 0) ready.push(l);
  }
  while (!ready.empty()) {
    const int l = ready.top();
    ready.pop();
    order_.push_back(l);
    for (int s : workload.layers[l].succs) {
      if (--indeg[s] == 0) ready.push(s);
    }
  }
}

double Evaluator::compute_seconds(int layer, int design, int p, Strategy s) const {
  if (p < 1 || p > max_p_) return -1;
  return compute_[slot(layer, design, p, s)];
}

double Evaluator::comm_seconds(int layer, int p, Strategy s) const {
  return comm_[(static_cast<std::size_t>(layer) * (max_p_ + 1) + p) * kStrategies +
               static_cast<int>(s)];
}

double Evaluator::lower_bound() const {
  double work = 0;
  for (std::size_t l = 0; l < workload_.layers.size(); ++l) {
    double best = std::numeric_limits<double>::infinity();
    for (int d = 0; d < designs_; ++d) {
      const double t = compute_[slot(static_cast<int>(l), d, 1, Strategy::None)];
      if (t >= 0) best = std::min(best, t);
    }
    if (std::isfinite(best)) work += best;
  }
  return work / std::max(1, system_.total_devices());
}

double Evaluator::host_gbs(const Group& group) const {
  if (system_.device_host_gbs.empty()) return system_.host_gbs;
  double gbs = std::numeric_limits<double>::infinity();
  for (int d = group.first_device; d < group.first_device + group.size; ++d) {
    gbs = std::min(gbs, system_.host_gbs_of(d));
  }
  return gbs;
}

double Evaluator::ring_gbs(const Group& group) const {
  if (system_.links.empty() || group.size < 2) return system_.intra_group_gbs;
  double gbs = std::numeric_limits<double>::infinity();
  for (int i = 0; i < group.size; ++i) {
    const int a = group.first_device + i;
    const int b = group.first_device + (i + 1) % group.size;
    if (a == b) continue;
    const Link* link = system_.link_between(a, b);
    gbs = std::min(gbs, link ? link->gbs : system_.intra_group_gbs);
  }
  return gbs;
}

double Evaluator::transfer_seconds(double bytes, const Group& from, const Group& to) const {
  if (from.first_device == to.first_device) return 0;
  if (system_.cpu_ranks > 0) {  // leader to leader, one message per sample
    const CpuNetwork& net = system_.cpu_network;
    return static_cast<double>(workload_.batch) * net.latency_s + bytes / (net.gbs * 1e9);
  }
  if (system_.route_via_host) {
    return bytes / (host_gbs(from) * 1e9) + bytes / (host_gbs(to) * 1e9);
  }
  double best = std::numeric_limits<double>::infinity();
  for (const Link& l : system_.links) {
    const bool a_from = l.a >= from.first_device && l.a < from.first_device + from.size;
    const bool b_from = l.b >= from.first_device && l.b < from.first_device + from.size;
    const bool a_to = l.a >= to.first_device && l.a < to.first_device + to.size;
    const bool b_to = l.b >= to.first_device && l.b < to.first_device + to.size;
    if ((a_from && b_to) || (b_from && a_to)) {
      best = std::min(best, l.latency_us * 1e-6 + bytes / (l.gbs * 1e9));
    }
  }
  return std::isfinite(best) ? best : bytes / (system_.inter_group_gbs * 1e9);
}

// Groups of a CPU cluster that compute at the same time share its cores: the list
// schedule above gives each group's order of layers, and the simulation stretches every
// layer by the threads busy beside it (cpu_cluster_cost.hpp). Without it a plan that
// runs two groups side by side on two cores was predicted 1.8x faster than it ran.
double Evaluator::simulate_groups(const Mapping& m, const std::vector<Strategy>& strat,
                                  const std::vector<SharedCoreLayer>& sim,
                                  std::vector<double>& start, std::vector<double>& finish,
                                  Schedule* out) const {
  const int layers = static_cast<int>(sim.size());
  std::vector<std::vector<int>> order(m.groups.size());
  for (int l = 0; l < layers; ++l) order[m.group_of[l]].push_back(l);
  for (auto& o : order) {
    std::stable_sort(o.begin(), o.end(), [&](int a, int b) { return start[a] < start[b]; });
  }
  const SharedCoreTimes t = simulate_shared_cores(sim, order, system_.cpu_network.cores);
  double makespan = 0;
  for (int l = 0; l < layers; ++l) {
    start[l] = t.start[l];
    finish[l] = t.finish[l];
    makespan = std::max(makespan, finish[l]);
  }
  if (out) {
    out->start = start;
    out->finish = finish;
    for (auto& tl : out->devices) tl.clear();
    for (int l = 0; l < layers; ++l) {
      const Group& grp = m.groups[m.group_of[l]];
      const int active = strat[l] == Strategy::None ? 1 : grp.size;
      for (int dev = grp.first_device; dev < grp.first_device + active; ++dev) {
        auto& tl = out->devices[dev];
        tl.push_back({l, t.start[l], t.computed[l], Interval::Kind::Compute});
        if (t.finish[l] > t.computed[l]) {
          tl.push_back({l, t.computed[l], t.finish[l], Interval::Kind::Comm});
        }
      }
    }
    for (Transfer& x : out->transfers) {
      const double delay = x.end - x.start;
      x.start = finish[x.from_layer];
      x.end = x.start + delay;
    }
  }
  return makespan;
}

double Evaluator::makespan(const Mapping& mapping) const {
  return run(mapping, nullptr);
}

Schedule Evaluator::schedule(const Mapping& mapping) const {
  Schedule s;
  run(mapping, &s);
  return s;
}

double Evaluator::run(const Mapping& m, Schedule* out) const {
  const int layers = static_cast<int>(workload_.layers.size());
  const int groups = static_cast<int>(m.groups.size());
  const double bpe = bytes_per_element();
  std::vector<Strategy> strat(layers, Strategy::None);
  std::string problem;
  for (int l = 0; l < layers; ++l) {
    const int g = m.group_of[l];
    const Group& grp = m.groups[g];
    Strategy s = l < static_cast<int>(m.strategy.size()) ? m.strategy[l] : Strategy::None;
    if (!strategy_valid(workload_.layers[l], s, grp.size)) s = Strategy::None;
    if (compute_seconds(l, grp.design, grp.size, s) < 0 && problem.empty()) {
      problem =
          fmt::format("layer '{}' ({}) is not supported by design '{}'", workload_.layers[l].name,
                      kind_name(workload_.layers[l].kind), system_.designs[grp.design].id);
    }
    strat[l] = s;
  }
  // Weight residency per group: knapsack over the per-device shards it must hold.
  std::vector<bool> resident(layers, false);
  {
    std::vector<std::vector<int>> members(groups);
    for (int l = 0; l < layers; ++l) members[m.group_of[l]].push_back(l);
    for (int g = 0; g < groups; ++g) {
      const Design& d = system_.designs[m.groups[g].design];
      std::vector<double> sizes;
      for (int l : members[g]) {
        sizes.push_back(shard_weight_elements(workload_.layers[l], strat[l], m.groups[g].size) *
                        bpe);
      }
      const std::vector<bool> keep = knapsack_fill(sizes, d.weight_capacity_bytes(), 1024);
      for (std::size_t i = 0; i < members[g].size(); ++i) resident[members[g][i]] = keep[i];
    }
  }
  std::vector<double> free_at(groups, 0), finish(layers, 0), start(layers, 0);
  std::vector<Layout> layout(layers, Layout::Single);
  if (out) {
    out->devices.assign(system_.total_devices(), {});
    out->start.assign(layers, 0);
    out->finish.assign(layers, 0);
    out->transfers.clear();
  }
  double makespan = 0;
  // CPU clusters whose ranks share fewer cores than they have threads: what each layer
  // needs, for the simulation below of groups computing at the same time.
  const bool shared_cores =
      system_.cpu_ranks > 0 && system_.cpu_network.cores > 0 &&
      system_.cpu_ranks * system_.designs[0].threads > system_.cpu_network.cores;
  std::vector<SharedCoreLayer> sim(shared_cores ? layers : 0);
  for (int l : order_) {
    const Layer& layer = workload_.layers[l];
    const int g = m.group_of[l];
    const Group& grp = m.groups[g];
    const int p = grp.size;
    const Strategy s = strat[l];
    const Layout need = input_layout(s, p);
    const Design& d = system_.designs[grp.design];
    double ready = 0;
    double reshard = 0;
    // CPU clusters: every rank holds the inputs; results return to each layer's leader.
    const bool cpu = system_.cpu_ranks > 0;
    const double host = host_gbs(grp);
    const double ring = ring_gbs(grp);
    if (layer.preds.empty() && !cpu) ready = layer.input_elements() * bpe / (host * 1e9);
    for (int u : layer.preds) {
      const double bytes = workload_.layers[u].output_elements() * bpe;
      if (shared_cores) {
        sim[l].ready_after.push_back(
            {u, m.group_of[u] == g ? 0.0 : transfer_seconds(bytes, m.groups[m.group_of[u]], grp)});
      }
      if (m.group_of[u] == g) {
        ready = std::max(ready, finish[u]);
        if (!cpu) reshard += reshard_seconds(layout[u], need, bytes, p, ring);
      } else {
        const double arrive = finish[u] + transfer_seconds(bytes, m.groups[m.group_of[u]], grp);
        ready = std::max(ready, arrive);
        if (out) out->transfers.push_back({u, l, m.group_of[u], g, bytes, finish[u], arrive});
      }
    }
    const double t0 = std::max(ready, free_at[g]);
    double comp = compute_seconds(l, grp.design, p, s);
    if (comp < 0) comp = kInfeasible;
    const double wbytes = shard_weight_elements(layer, s, p) * bpe;
    const double weights = resident[l] ? 0 : wbytes / (host * 1e9);
    // The table's collectives ran at the global intra-group figure; they scale with 1/bw.
    double comm = comm_seconds(l, p, s) * (system_.intra_group_gbs / ring) + reshard;
    if (cpu && s == Strategy::Batch && p > 1) {
      // A chain of batch layers keeps the samples on the ranks: inputs are scattered only
      // from outside the chain (graph inputs are on every rank), results gathered only
      // for readers outside it or as graph outputs.
      auto in_chain = [&](int u) { return m.group_of[u] == g && strat[u] == Strategy::Batch; };
      const bool scatter = !std::all_of(layer.preds.begin(), layer.preds.end(), in_chain);
      const bool gather =
          layer.succs.empty() || !std::all_of(layer.succs.begin(), layer.succs.end(), in_chain);
      comm = cpu_batch_comm_seconds(layer, p, system_.cpu_network, scatter, gather) *
             (system_.intra_group_gbs / ring);
    }
    if (cpu && s == Strategy::Spatial && p > 1) {
      // A chain of spatially split convolutions, each read only by the next, keeps its
      // row blocks on the ranks: only halo rows move between them.
      auto keeps_rows = [&](int u, int v) {
        const Layer& a = workload_.layers[u];
        const Layer& b = workload_.layers[v];
        return m.group_of[u] == g && m.group_of[v] == g && strat[u] == Strategy::Spatial &&
               strat[v] == Strategy::Spatial && a.kind == LayerKind::Conv &&
               b.kind == LayerKind::Conv && a.succs.size() == 1 && a.succs[0] == v;
      };
      const bool scatter = !(layer.preds.size() == 1 && keeps_rows(layer.preds[0], l));
      const bool gather = !(layer.succs.size() == 1 && keeps_rows(l, layer.succs[0]));
      comm = cpu_spatial_comm_seconds(layer, p, system_.cpu_network, scatter, gather) *
             (system_.intra_group_gbs / ring);
    }
    // Memory per device: this layer's weight shard and activations must fit in DRAM.
    const int ways = s == Strategy::None ? 1 : p;
    const double act = (layer.input_elements() + layer.output_elements()) * bpe / ways;
    if (std::min(wbytes, d.dram_bytes() * d.weight_fraction) + act > d.dram_bytes() &&
        problem.empty()) {
      problem = fmt::format("layer '{}' does not fit in the {:.2f} GB of design '{}'", layer.name,
                            d.dram_gb, d.id);
    }
    const double busy = system_.overlap ? std::max(comp + weights, comm) : comp + weights + comm;
    if (shared_cores) {
      // The table's compute already includes this group's own oversubscription; the
      // simulation applies every group's at once instead.
      const int threads = cpu_busy_ranks(layer, s, p) * d.threads;
      sim[l].group = g;
      sim[l].threads = threads;
      sim[l].work = comp / cpu_oversubscription(threads, system_.cpu_network);
      sim[l].fixed = busy - comp;
    }
    const double t1 = t0 + busy;
    start[l] = t0;
    finish[l] = t1;
    free_at[g] = t1;
    layout[l] = output_layout(s, p);
    double end = t1;
    if (layer.succs.empty() && !cpu) end += layer.output_elements() * bpe / (host * 1e9);
    makespan = std::max(makespan, end);
    if (out) {
      out->start[l] = t0;
      out->finish[l] = t1;
      const int active = s == Strategy::None ? 1 : p;
      for (int dev = grp.first_device; dev < grp.first_device + active; ++dev) {
        auto& tl = out->devices[dev];
        double t = t0;
        if (system_.overlap) {
          if (comm > 0) tl.push_back({l, t0, t0 + comm, Interval::Kind::Comm});
          if (weights > 0) tl.push_back({l, t0, t0 + weights, Interval::Kind::Weights});
          tl.push_back({l, t0 + weights, t0 + weights + comp, Interval::Kind::Compute});
          continue;
        }
        if (reshard > 0) tl.push_back({l, t, t + reshard, Interval::Kind::Comm});
        t += reshard;
        if (weights > 0) tl.push_back({l, t, t + weights, Interval::Kind::Weights});
        t += weights;
        tl.push_back({l, t, t + comp, Interval::Kind::Compute});
        t += comp;
        if (comm - reshard > 0) tl.push_back({l, t, t + comm - reshard, Interval::Kind::Comm});
      }
    }
  }
  if (shared_cores) makespan = simulate_groups(m, strat, sim, start, finish, out);
  const bool feasible = problem.empty();
  if (!feasible) makespan += kInfeasible;
  if (out) {
    out->makespan = makespan;
    out->feasible = feasible;
    out->problem = problem;
    out->resident = resident;
    out->strategy = strat;
  }
  return makespan;
}

}  // namespace orchid::mapping
