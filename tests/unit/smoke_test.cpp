#include <gtest/gtest.h>

#include "ir/graph.hpp"

TEST(Smoke, EmptyGraphValidates) {
  orchid::Graph g;
  g.name = "empty";
  EXPECT_NO_THROW(g.validate());
}
