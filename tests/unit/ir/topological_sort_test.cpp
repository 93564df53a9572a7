// The shared stable topological sort.
#include <gtest/gtest.h>

#include "ir/topological_sort.hpp"

namespace orchid {
namespace {

TEST(IrTopologicalSort, KeepsAValidOrderAndBreaksTiesBySmallestIndex) {
  // 0 -> 2, 1 -> 2: already valid, kept.
  EXPECT_EQ(stable_topological_order({{2}, {2}, {}}), (std::vector<std::size_t>{0, 1, 2}));
  // 2 -> 0: 1 is ready before 0 is released.
  EXPECT_EQ(stable_topological_order({{}, {}, {0}}), (std::vector<std::size_t>{1, 2, 0}));
  // Repeated edges release together.
  EXPECT_EQ(stable_topological_order({{1, 1}, {}}), (std::vector<std::size_t>{0, 1}));
}

TEST(IrTopologicalSort, ACycleLeavesItsNodesOut) {
  const auto order = stable_topological_order({{1}, {2}, {1}, {}});
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 3}));
}

}  // namespace
}  // namespace orchid
