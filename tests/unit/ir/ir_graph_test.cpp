// Graph IR: construction, validation errors, topological order, dead-node removal.
#include <gtest/gtest.h>

#include "ir/graph.hpp"
#include "ir/graph_stats.hpp"
#include "ir/op_registry.hpp"
#include "util/error.hpp"

namespace orchid {
namespace {

Node make_node(const std::string& name, const std::string& op, std::vector<std::string> in,
               std::vector<std::string> out) {
  Node n;
  n.name = name;
  n.op_type = op;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

// x -> Relu -> a -> Add(a, w) -> y
Graph small_graph() {
  Graph g;
  g.name = "small";
  g.set_type("x", DType::F32, {2, 3});
  g.inputs = {"x"};
  g.set_constant("w", Tensor::from_vector<float>({3}, {1, 2, 3}));
  g.nodes.push_back(make_node("relu", "Relu", {"x"}, {"a"}));
  g.nodes.push_back(make_node("add", "Add", {"a", "w"}, {"y"}));
  g.outputs = {"y"};
  return g;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(IrGraph, ValidGraphPassesValidationAndInfersShapes) {
  Graph g = small_graph();
  infer_shapes(g);
  EXPECT_NO_THROW(g.validate());
  EXPECT_EQ(g.tensor("y").shape, (Shape{2, 3}));
  EXPECT_EQ(g.weights(), std::vector<std::string>{"w"});
}

TEST(IrGraph, DanglingInputIsReported) {
  Graph g = small_graph();
  g.nodes[1].inputs[1] = "missing";
  const std::string msg = error_of([&] { g.validate(); });
  EXPECT_NE(msg.find("missing"), std::string::npos) << msg;
  EXPECT_NE(msg.find("add"), std::string::npos) << msg;
}

TEST(IrGraph, CycleIsReported) {
  Graph g = small_graph();
  g.nodes[0].inputs[0] = "y";  // relu reads add's output, add reads relu's
  const std::string msg = error_of([&] { g.validate(); });
  EXPECT_NE(msg.find("cycle"), std::string::npos) << msg;
}

TEST(IrGraph, DuplicateNodeNameAndProducerAreReported) {
  Graph g = small_graph();
  g.nodes[1].name = "relu";
  EXPECT_NE(error_of([&] { g.validate(); }).find("two nodes named 'relu'"), std::string::npos);
  Graph h = small_graph();
  h.nodes[1].outputs[0] = "a";
  h.outputs = {"a"};
  EXPECT_NE(error_of([&] { h.validate(); }).find("produced twice"), std::string::npos);
}

TEST(IrGraph, ShapeMismatchIsReportedWithNodeName) {
  Graph g = small_graph();
  g.set_constant("w", Tensor::from_vector<float>({4}, {1, 2, 3, 4}));
  const std::string msg = error_of([&] { infer_shapes(g); });
  EXPECT_NE(msg.find("add"), std::string::npos) << msg;
  EXPECT_NE(msg.find("broadcast"), std::string::npos) << msg;
}

TEST(IrGraph, ConstantDisagreeingWithDeclaredShapeIsReported) {
  Graph g = small_graph();
  g.tensor("w").shape = {4};
  EXPECT_NE(error_of([&] { g.validate(); }).find("'w'"), std::string::npos);
}

TEST(IrGraph, UnknownOpIsUnsupportedWithOpsetAndNode) {
  Graph g = small_graph();
  g.nodes[0].op_type = "FancyOp";
  try {
    infer_shapes(g);
    FAIL() << "expected UnsupportedError";
  } catch (const UnsupportedError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("FancyOp"), std::string::npos) << msg;
    EXPECT_NE(msg.find("relu"), std::string::npos) << msg;
    EXPECT_NE(msg.find("opset 17"), std::string::npos) << msg;
  }
}

TEST(IrGraph, TopologicalOrderIsDeterministicAndStable) {
  Graph g = small_graph();
  std::swap(g.nodes[0], g.nodes[1]);
  EXPECT_EQ(g.topological_order(), (std::vector<std::size_t>{1, 0}));
  g.sort_topologically();
  EXPECT_EQ(g.nodes[0].name, "relu");
}

TEST(IrGraph, RemoveDeadNodesDropsUnusedBranches) {
  Graph g = small_graph();
  g.nodes.push_back(make_node("unused", "Relu", {"a"}, {"z"}));
  g.remove_dead_nodes();
  EXPECT_EQ(g.nodes.size(), 2u);
  EXPECT_FALSE(g.has_tensor("z"));
}

TEST(IrGraph, PrintingNamesEveryNode) {
  Graph g = small_graph();
  infer_shapes(g);
  const std::string text = g.to_string();
  EXPECT_NE(text.find("Relu"), std::string::npos);
  EXPECT_NE(text.find("y:f32[2x3]"), std::string::npos) << text;
}

TEST(IrGraph, StatsCountParametersAndFlops) {
  Graph g = small_graph();
  infer_shapes(g);
  const GraphStats s = compute_graph_stats(g);
  EXPECT_EQ(s.nodes, 2u);
  EXPECT_EQ(s.parameters, 3);
  EXPECT_EQ(s.parameter_bytes, 12);
  EXPECT_EQ(s.flops, 12);  // 6 for Relu + 6 for Add
  EXPECT_EQ(s.op_histogram.at("Add"), 1u);
}

TEST(IrTensor, CastAndHalfRoundTrip) {
  Tensor t = Tensor::from_vector<float>({4}, {1.5f, -2.25f, 65504.0f, 0.0001f});
  Tensor h = t.cast(DType::F16).cast(DType::F32);
  EXPECT_FLOAT_EQ(h.data<float>()[0], 1.5f);
  EXPECT_FLOAT_EQ(h.data<float>()[1], -2.25f);
  EXPECT_FLOAT_EQ(h.data<float>()[2], 65504.0f);
  EXPECT_NEAR(h.data<float>()[3], 0.0001f, 1e-6);
  Tensor big = Tensor::from_vector<std::int64_t>({1}, {(std::int64_t{1} << 53) + 1});
  EXPECT_EQ(big.cast(DType::I64).data<std::int64_t>()[0], (std::int64_t{1} << 53) + 1);
  EXPECT_THROW((void)t.data<std::int64_t>(), Error);
}

}  // namespace
}  // namespace orchid
