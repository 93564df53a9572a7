// Seeding heuristics of the outer GA.
#include "mapping/search/seeding.hpp"

#include <algorithm>
#include <map>
#include <numeric>

#include "mapping/genetic_search.hpp"

namespace orchid::mapping::search {

std::vector<int> apportion(const std::vector<double>& weights, int devices) {
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
}

namespace {

// The seeds share these questions about the workload and the design library.
class Seeder {
 public:
  explicit Seeder(const Problem& pb)
      : pb_(pb), sys_(pb.ev.system()), w_(pb.ev.workload()), nd_(pb.design_count()) {}

  std::vector<Outer> seeds() {
    homogeneous();
    by_kind();
    main_and_side();
    by_modality();
    return std::move(seeds_);
  }

 private:
  void add(const Outer& o) {
    if (std::find(seeds_.begin(), seeds_.end(), o) == seeds_.end()) seeds_.push_back(o);
  }
  int layers() const { return static_cast<int>(w_.layers.size()); }
  double work(int layer, int d) const { return work_of(pb_.ev, layer, pb_.fpga_designs[d]); }

  // Best FPGA design for a set of layers (least total single-device time).
  int best_design_for(const std::vector<int>& ls) const {
    int best = 0;
    double best_t = 1e300;
    for (int d = 0; d < nd_; ++d) {
      double t = 0;
      for (int l : ls) t += work(l, d);
      if (t < best_t) {
        best_t = t;
        best = d;
      }
    }
    return best;
  }
  bool runs_all(int d, const std::vector<int>& ls) const {
    for (int l : ls) {
      if (!sys_.designs[pb_.fpga_designs[d]].supports_kind(w_.layers[l].kind)) return false;
    }
    return true;
  }
  // Units go to the group whose design does their work fastest.
  void place_units(Outer& o) const {
    for (int u = 0; u < pb_.unit_count(); ++u) {
      int best = 0;
      double best_t = 1e300;
      for (int sl = 0; sl < pb_.fpga_slots; ++sl) {
        if (o.size[sl] <= 0) continue;
        double t = 0;
        for (int l : pb_.units[u]) t += work(l, o.design[sl]);
        if (t < best_t) {
          best_t = t;
          best = sl;
        }
      }
      o.unit_slot[u] = best;
    }
  }

  // Seeds 1 and 2: one group of every device, the best design first, then every other
  // design that runs the whole workload (the data-parallel baseline's search space, so
  // with all-batch inner seeds the GA starts from that baseline's plan).
  void homogeneous() {
    std::vector<int> all(layers());
    std::iota(all.begin(), all.end(), 0);
    Outer one = blank_outer(pb_);
    one.size[0] = sys_.fpga_devices;
    one.design[0] = best_design_for(all);
    add(one);
    for (int d = 0; d < nd_; ++d) {
      if (!runs_all(d, all)) continue;
      one.design[0] = d;
      add(one);
    }
  }

  // Seed 3: the best design of every heavy kind, kinds that share a best design sharing
  // its group, groups sized by their work.
  void by_kind() {
    std::vector<std::vector<int>> layers_of(kLayerKinds);
    for (int l = 0; l < layers(); ++l) layers_of[static_cast<int>(w_.layers[l].kind)].push_back(l);
    std::vector<int> kind_design;
    std::vector<double> design_work;
    for (int k = 0; k < kLayerKinds; ++k) {
      if (layers_of[k].empty() || k == static_cast<int>(LayerKind::Cheap)) continue;
      const int d = best_design_for(layers_of[k]);
      double t = 0;
      for (int l : layers_of[k]) t += work(l, d);
      const auto it = std::find(kind_design.begin(), kind_design.end(), d);
      if (it == kind_design.end()) {
        kind_design.push_back(d);
        design_work.push_back(t);
      } else {
        design_work[it - kind_design.begin()] += t;
      }
    }
    const int groups = static_cast<int>(kind_design.size());
    if (groups <= 1 || groups > pb_.fpga_slots || groups > sys_.fpga_devices) return;
    Outer o = blank_outer(pb_);
    const auto sz = apportion(design_work, sys_.fpga_devices);
    for (int i = 0; i < groups; ++i) {
      o.design[i] = kind_design[i];
      o.size[i] = sz[i];
    }
    place_units(o);
    add(o);
  }

  // Seed 4: a main design and, for the layers it cannot run, the best design for those
  // on a small side group (1 device, a quarter, half).
  void main_and_side() {
    for (int d = 0; d < nd_ && pb_.fpga_slots > 1 && sys_.fpga_devices > 1; ++d) {
      std::vector<int> missing;
      double main_work = 0;
      for (int l = 0; l < layers(); ++l) {
        if (sys_.designs[pb_.fpga_designs[d]].supports_kind(w_.layers[l].kind))
          main_work += work(l, d);
        else
          missing.push_back(l);
      }
      if (missing.empty() || main_work == 0) continue;
      const int side = best_design_for(missing);
      if (!runs_all(side, missing)) continue;
      for (int s : {1, sys_.fpga_devices / 4, sys_.fpga_devices / 2}) {
        if (s < 1 || s >= sys_.fpga_devices) continue;
        Outer o = blank_outer(pb_);
        o.size[0] = sys_.fpga_devices - s;
        o.design[0] = d;
        o.size[1] = s;
        o.design[1] = side;
        place_units(o);
        add(o);
      }
    }
  }

  // Seed 5: one group per modality, sized by work.
  void by_modality() {
    std::map<int, std::vector<int>> by_mod;
    for (int l = 0; l < layers(); ++l) by_mod[w_.layers[l].modality].push_back(l);
    if (by_mod.size() <= 1 || static_cast<int>(by_mod.size()) > pb_.fpga_slots) return;
    Outer o = blank_outer(pb_);
    std::vector<double> weights;
    std::map<int, int> slot_of;
    int i = 0;
    for (auto& [mod, ls] : by_mod) {
      o.design[i] = best_design_for(ls);
      double t = 0;
      for (int l : ls) t += std::min(work(l, o.design[i]), 1e3);
      weights.push_back(t);
      slot_of[mod] = i++;
    }
    const auto sz = apportion(weights, sys_.fpga_devices);
    for (std::size_t j = 0; j < sz.size(); ++j) o.size[j] = sz[j];
    for (int u = 0; u < pb_.unit_count(); ++u) {
      o.unit_slot[u] = slot_of[w_.layers[pb_.units[u][0]].modality];
    }
    add(o);
  }

  const Problem& pb_;
  const System& sys_;
  const Workload& w_;
  const int nd_;
  std::vector<Outer> seeds_;
};

}  // namespace

std::vector<Outer> heuristic_seeds(const Problem& pb) {
  if (pb.fpga_slots <= 0) return {blank_outer(pb)};
  return Seeder(pb).seeds();
}

std::vector<Outer> initial_population(const Problem& pb, const SearchOptions& opt,
                                      SplitMix64& rng) {
  std::vector<Outer> pop = heuristic_seeds(pb);
  while (static_cast<int>(pop.size()) < opt.population) {
    Outer o = blank_outer(pb);
    if (pb.fpga_slots > 0) {
      const int used = 1 + static_cast<int>(rng.below(pb.fpga_slots));
      for (int d = 0; d < pb.fpga_devices; ++d) ++o.size[rng.below(used)];
      for (int s = 0; s < pb.fpga_slots; ++s) {
        o.design[s] = static_cast<int>(rng.below(pb.design_count()));
      }
    }
    const Outer& base = pop[rng.below(pop.size())];
    o.unit_slot = base.unit_slot;
    for (int u = 0; u < pb.unit_count(); ++u) {
      if (rng.below(opt.random_run_move_one_in) == 0) {
        o.unit_slot[u] = static_cast<int>(rng.below(pb.slots()));
      }
    }
    pop.push_back(o);
  }
  return pop;
}

}  // namespace orchid::mapping::search
