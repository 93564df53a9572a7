#include "runtime/kernel_dataflow.hpp"

namespace orchid {

std::set<std::string> needed_after(const Graph& graph, const PlannedKernel& pk, std::size_t begin,
                                   std::size_t end) {
  std::set<std::string> produced, needed;
  for (std::size_t i = begin; i < end; ++i) {
    for (const auto& o : graph.nodes[pk.nodes[i]].outputs) produced.insert(o);
  }
  for (std::size_t i = 0; i < pk.nodes.size(); ++i) {
    if (i >= begin && i < end) continue;
    for (const auto& t : graph.nodes[pk.nodes[i]].inputs) {
      if (produced.count(t)) needed.insert(t);
    }
  }
  for (const auto& t : pk.outputs) {
    if (produced.count(t)) needed.insert(t);
  }
  return needed;
}

std::size_t readers_from(const Graph& graph, const PlannedKernel& pk, std::size_t from,
                         const std::string& t) {
  std::size_t readers = 0;
  for (std::size_t i = from; i < pk.nodes.size(); ++i) {
    for (const auto& in : graph.nodes[pk.nodes[i]].inputs) readers += in == t;
  }
  return readers;
}

}  // namespace orchid
