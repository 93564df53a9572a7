#include "runtime/in_place_residuals.hpp"

#include <map>
#include <numeric>
#include <string>
#include <unordered_map>

#include "ir/op_traits.hpp"
#include "runtime/epilogue_matcher.hpp"
#include "runtime/onednn_linear.hpp"

namespace orchid {

ArenaLayout in_place_residuals(const Graph& graph, const Plan& plan) {
  ArenaLayout out;
  out.slots = plan.arena;
  std::unordered_map<std::string, std::size_t> slot_of;
  for (std::size_t i = 0; i < out.slots.size(); ++i) slot_of[out.slots[i].tensor] = i;
  std::vector<std::size_t> parent(out.slots.size());
  std::iota(parent.begin(), parent.end(), std::size_t{0});
  auto root = [&](std::size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
    const PlannedKernel& pk = plan.kernels[k];
    if (pk.nodes.empty()) continue;
    const Node& conv = graph.nodes[pk.nodes.front()];
    if (op_traits(conv.op_type).onednn != OnednnAlgorithm::Convolution ||
        !linear_supported(graph, conv)) {
      continue;
    }
    const EpilogueMatch epilogue = match_epilogue(graph, pk, 0);
    if (epilogue.nodes != pk.nodes.size()) continue;  // more than one oneDNN primitive
    const auto result = slot_of.find(epilogue.result);
    if (result == slot_of.end() || out.slots[result->second].first_kernel != k) continue;
    // What the kernel's nodes read, by the arena tensor that stands for each input.
    auto arena_name = [&](const std::string& t) {
      for (std::size_t i = 0; i < pk.inputs.size(); ++i) {
        if (pk.inputs[i] == t) return pk.sources[i];
      }
      return t;
    };
    std::map<std::string, int> reads;
    for (std::size_t n : pk.nodes) {
      for (const auto& t : graph.nodes[n].inputs) {
        if (!t.empty()) ++reads[arena_name(t)];
      }
    }
    const TensorInfo& y = graph.tensor(epilogue.result);
    for (const PostOp& p : epilogue.post_ops) {
      if (p.kind != PostOp::Kind::Binary || p.algorithm != OnednnAlgorithm::BinaryAdd) continue;
      const std::string residual = arena_name(p.operand);
      const auto it = slot_of.find(residual);
      if (it == slot_of.end()) continue;  // a graph input or a weight
      const ArenaSlot& r = out.slots[it->second];
      const TensorInfo& ri = graph.tensor(residual);
      if (r.last_kernel != k || reads[residual] != 1 || ri.shape != y.shape ||
          ri.dtype != DType::F32 || y.dtype != DType::F32 ||
          r.bytes != out.slots[result->second].bytes) {
        continue;
      }
      parent[root(result->second)] = root(it->second);
      out.in_place_kernels.push_back(k);
      break;  // one sum post-op per primitive
    }
  }
  if (out.in_place_kernels.empty()) {
    out.bytes = plan.arena_bytes;  // the plan's own layout
    return out;
  }
  std::map<std::size_t, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < out.slots.size(); ++i) groups[root(i)].push_back(i);
  std::vector<std::vector<std::size_t>> same_block;
  for (auto& [r, members] : groups) {
    if (members.size() > 1) same_block.push_back(std::move(members));
  }
  out.bytes = assign_arena_offsets(out.slots, same_block);
  return out;
}

}  // namespace orchid
