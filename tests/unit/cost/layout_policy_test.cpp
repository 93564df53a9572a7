// The channels-last rule shared by the executor, the kernel timer and the kernel
// signature, and the boundaries it gives a kernel from its neighbours in a graph.
#include <gtest/gtest.h>

#include "cost/layout_policy.hpp"
#include "fission/kernel_view.hpp"
#include "ir/op_registry.hpp"

namespace orchid {
namespace {

using U = LayoutUse;

bool keep(std::initializer_list<LayoutUse> uses) {
  return keep_channels_last(std::vector<LayoutUse>(uses));
}

TEST(LayoutPolicy, KeepsWhatAConvWritesAndConvsReadChannelsLast) {
  EXPECT_TRUE(keep({U::ChannelsLastWrite, U::ChannelsLastSource}));
  EXPECT_TRUE(keep({U::ChannelsLastWrite, U::ChannelsLastOperand, U::ChannelsLastSource}));
  EXPECT_FALSE(keep({U::ChannelsLastWrite}));   // nobody reads it so
  EXPECT_FALSE(keep({U::ChannelsLastSource}));  // nobody writes it so
  EXPECT_FALSE(keep({U::ChannelsLastWrite, U::ChannelsLastSource, U::Plain}));  // a loop reads it
  EXPECT_FALSE(keep({}));
  LayoutUses uses;
  uses.add("a", U::ChannelsLastWrite);
  uses.add("a", U::ChannelsLastSource);
  uses.add("b", U::ChannelsLastWrite);
  uses.add("b", U::Plain);
  EXPECT_EQ(uses.channels_last(), std::set<std::string>{"a"});
}

// x -> Conv1 -> Relu (r) -> Conv2 (c2) -> Add(c2, r) (residual, y); r also read by Sigmoid
// when `loop_reader`.
Graph residual_graph(bool loop_reader) {
  Graph g;
  g.opset = 17;
  g.set_type("x", DType::F32, {1, 4, 6, 6});
  g.inputs = {"x"};
  Tensor w(DType::F32, {4, 4, 1, 1});
  g.set_constant("w1", w);
  g.set_constant("w2", w);
  auto node = [&](const char* op, std::vector<std::string> in, std::string out) {
    Node n;
    n.name = out;
    n.op_type = op;
    n.inputs = std::move(in);
    n.outputs = {std::move(out)};
    g.nodes.push_back(std::move(n));
  };
  node("Conv", {"x", "w1"}, "c1");
  node("Relu", {"c1"}, "r");
  node("Conv", {"r", "w2"}, "c2");
  node("Add", {"c2", "r"}, "y");
  g.outputs = {"y"};
  if (loop_reader) {
    node("Sigmoid", {"r"}, "s");
    g.outputs.push_back("s");
  }
  infer_shapes(g);
  return g;
}

TEST(LayoutPolicy, BoundariesFollowTheNeighbours) {
  const Graph g = residual_graph(false);
  // Conv1 + Relu: "r" goes to Conv2 (source) and to the residual Add only.
  EXPECT_EQ(channels_last_boundaries(make_kernel_view(g, {0, 1})), std::set<std::string>{"r"});
  // Conv2 alone: "r" comes from a Conv through an elementwise epilogue; "c2" feeds the
  // residual Add, whose other operand is a full-size activation.
  EXPECT_EQ(channels_last_boundaries(make_kernel_view(g, {2})), (std::set<std::string>{"c2", "r"}));
  // The Add: its result is a graph output, read plain.
  EXPECT_EQ(channels_last_boundaries(make_kernel_view(g, {3})), (std::set<std::string>{"c2", "r"}));
  EXPECT_TRUE(channels_last_boundaries(make_kernel_view(g, {0})).empty());  // x: a graph input

  const Graph looped = residual_graph(true);
  EXPECT_TRUE(channels_last_boundaries(make_kernel_view(looped, {0, 1})).empty());
}

}  // namespace
}  // namespace orchid
