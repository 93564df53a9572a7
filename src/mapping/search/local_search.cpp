// Local search over outer individuals.
#include "mapping/search/local_search.hpp"

#include "mapping/genetic_search.hpp"

namespace orchid::mapping::search {

std::vector<Outer> neighbours(const Problem& pb, const Outer& cur) {
  const int nd = pb.design_count();
  std::vector<Outer> moves;
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
  for (int u = 0; u < pb.unit_count(); ++u) {
    for (int sl = 0; sl < pb.slots(); ++sl) {
      if (sl == cur.unit_slot[u] || (sl < pb.fpga_slots && cur.size[sl] <= 0)) continue;
      Outer o = cur;
      o.unit_slot[u] = sl;
      moves.push_back(o);
    }
  }
  return moves;
}

void local_search(const Problem& pb, MemoisedEvaluator& evaluator, const SearchOptions& opt,
                  LocalSearchState& state, const std::function<bool()>& out_of_time,
                  const std::function<void(int, std::size_t)>& report) {
  if (pb.fpga_slots <= 0) return;
  for (int pass = 0; pass < opt.local_search_passes && !out_of_time(); ++pass) {
    const std::vector<Outer> moves = neighbours(pb, state.outer);
    std::vector<double> fit;
    std::vector<Mapping> maps;
    evaluator.evaluate_all(moves, fit, maps);
    std::size_t best = moves.size();
    for (std::size_t i = 0; i < moves.size(); ++i) {
      if (fit[i] < state.latency * (1 - 1e-9) && (best == moves.size() || fit[i] < fit[best]))
        best = i;
    }
    if (best == moves.size()) return;
    state.latency = fit[best];
    state.mapping = maps[best];
    state.outer = moves[best];
    ++state.moves;
    if (report) report(pass, moves.size());
  }
}

}  // namespace orchid::mapping::search
