// Splits a primitive graph into regions that are optimised independently. A region
// boundary is a single-tensor cut of the main graph — one tensor (besides graph inputs,
// weights and long-lived side tensors such as an attention mask) is live across it —
// that no baseline kernel straddles. Candidates never
// cross a boundary, so each region's BLP is exact for the candidates inside it; the
// boundary tensor is simply required of the region that produces it. Nodes of
// alternative subgraphs go with the region of the tensor they stand in for.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.hpp"

namespace orchid {

struct RegionSplit {
  std::vector<std::vector<std::size_t>> regions;  // sorted node indices
  std::vector<int> region_of;                     // per node
  std::size_t possible_cuts = 0;                  // single-tensor cuts found
};

// `keep_together`: node sets (baseline kernels) that must not be split.
// `target_size`: regions grow to at least this many nodes before the next cut.
RegionSplit split_into_regions(const Graph& primitives,
                               const std::set<std::size_t>& alternative_nodes,
                               const std::map<std::string, std::string>& alternatives,
                               const std::vector<std::vector<std::size_t>>& keep_together,
                               std::size_t target_size);

// Splits one region in two where at most `max_live` of its tensors are live (none: the
// parts are independent) and no
// `keep_together` group straddles, at the position (in its middle half) with the fewest
// live tensors, ties nearest the middle. For wide regions without a single-tensor cut
// (parallel detection heads): each live tensor is then required of the first part, as
// a single cut tensor is. Empty when the region has no such position or holds
// alternative nodes.
std::vector<std::vector<std::size_t>> split_wide_region(
    const Graph& primitives, const std::vector<std::size_t>& region,
    const std::set<std::size_t>& alternative_nodes,
    const std::vector<std::vector<std::size_t>>& keep_together, int max_live);

}  // namespace orchid
