// Outer chromosome: problem shape, decoding into a mapping, memo keys.
#include "mapping/search/encoding.hpp"

#include <algorithm>
#include <map>

#include "mapping/genetic_search.hpp"

namespace orchid::mapping::search {

Problem make_problem(const Evaluator& ev, const SearchOptions& opt) {
  const System& sys = ev.system();
  const Workload& w = ev.workload();
  Problem pb{ev, {}, {}, 0, sys.fpga_devices, {}, {}};
  for (std::size_t d = 0; d < sys.designs.size(); ++d) {
    if (!sys.designs[d].is_gpu) pb.fpga_designs.push_back(static_cast<int>(d));
  }
  std::map<int, int> gpu_count;
  for (int d : sys.gpu_designs) ++gpu_count[d];
  for (auto [d, c] : gpu_count) pb.gpu_groups.push_back({d, c});
  pb.fpga_slots = pb.fpga_designs.empty() ? 0 : std::min(sys.fpga_devices, opt.max_groups);
  // Layer runs: consecutive layers (list order) of one modality, at most max_layer_runs
  // of equal length (a modality change starts a new run early).
  const int layers = static_cast<int>(w.layers.size());
  const int per_run = std::max(1, (layers + opt.max_layer_runs - 1) / opt.max_layer_runs);
  pb.unit_of.assign(layers, 0);
  for (int l = 0; l < layers; ++l) {
    if (pb.units.empty() || static_cast<int>(pb.units.back().size()) >= per_run ||
        w.layers[pb.units.back().back()].modality != w.layers[l].modality) {
      pb.units.emplace_back();
    }
    pb.units.back().push_back(l);
    pb.unit_of[l] = static_cast<int>(pb.units.size()) - 1;
  }
  return pb;
}

Outer blank_outer(const Problem& pb) {
  Outer o;
  o.size.assign(pb.fpga_slots, 0);
  o.design.assign(pb.fpga_slots, 0);
  o.unit_slot.assign(pb.unit_count(), 0);
  return o;
}

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

double work_of(const Evaluator& ev, int layer, int design) {
  const double t = ev.compute_seconds(layer, design, 1, Strategy::None);
  return t < 0 ? 1e30 : t;
}

}  // namespace orchid::mapping::search
