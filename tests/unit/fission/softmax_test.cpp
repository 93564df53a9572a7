// Operator fission: Softmax, LogSoftmax, Hardmax, and the softmax·V alternative.
#include "fission/fission_test_util.hpp"

namespace orchid {
namespace {

using namespace fission_test;

// ---------------------------------------------------------------- softmax family

TEST(FissionSoftmax, LastAxisIsNumericallySafe) {
  const Graph g = single_op_graph("Softmax", {{"x", random_f32({2, 3, 5}, 1)}});
  const FissionResult r = check_rule(g, {"ReduceMax", "Sub", "Exp", "ReduceSum", "Div"});
  EXPECT_EQ(classes(r), (std::map<PrimitiveClass, std::size_t>{{kElementwise, 3}, {kReduce, 2}}));
  // Large logits would overflow exp() without the max subtraction.
  TensorMap feed{{"x", random_f32({2, 3, 5}, 2, 80.0F, 200.0F)}};
  EXPECT_TRUE(outputs_match(g, r.graph, feed, 1e-5, 1e-4));
  for (const Node& node : r.graph.nodes) {
    if (node.op_type == "ReduceMax") {
      EXPECT_EQ(node.attr_ints("axes", {}), std::vector<std::int64_t>{2});
    }
  }
}

TEST(FissionSoftmax, InnerAxis) {
  const Graph g =
      single_op_graph("Softmax", {{"x", random_f32({2, 3, 5}, 1)}}, {{"axis", std::int64_t{1}}});
  const FissionResult r = check_rule(g, {"ReduceMax", "Sub", "Exp", "ReduceSum", "Div"});
  for (const Node& node : r.graph.nodes) {
    if (node.op_type == "ReduceMax") {
      EXPECT_EQ(node.attr_ints("axes", {}), std::vector<std::int64_t>{1});
    }
  }
}

TEST(FissionSoftmax, LogSoftmax) {
  const Graph g =
      single_op_graph("LogSoftmax", {{"x", random_f32({4, 6}, 3)}}, {{"axis", std::int64_t{0}}});
  check_rule(g, {"ReduceMax", "Sub", "Exp", "ReduceSum", "Log"});
}

TEST(FissionSoftmax, Hardmax) {
  const Graph g =
      single_op_graph("Hardmax", {{"x", random_f32({3, 4, 5}, 4)}}, {{"axis", std::int64_t{1}}});
  const FissionResult r = check_rule(g, {"ArgMax", "Equal", "Cast"});
  EXPECT_EQ(classes(r), (std::map<PrimitiveClass, std::size_t>{{kElementwise, 2}, {kReduce, 1}}));
}

// ---------------------------------------------------------------- softmax · V

TEST(FissionSoftmaxMatMul, AlternativeReassociatesTheNormalisation) {
  const Graph g = attention_graph({2, 3, 4, 5}, {2, 3, 5, 6});
  const FissionResult r =
      check_rule(g, {"ReduceMax", "Sub", "Exp", "ReduceSum", "Div", "MatMul", "Concat", "Slice"});
  ASSERT_EQ(r.alternatives.size(), 1U);
  EXPECT_EQ(r.alternatives.begin()->second, "Y");
  EXPECT_EQ(op_types(r.graph).count("MatMul"), 2U);
  expect_main_graph_ignores_alternatives(r);
  expect_alternatives_match(g, r, 1);
  // The alternative's MatMul is [2,3,4,5] x [2,3,5,7].
  for (const Node& node : r.graph.nodes) {
    if (node.op_type == "Concat") {
      EXPECT_EQ(r.graph.tensor(node.outputs[0]).shape, (Shape{2, 3, 5, 7}));
    }
  }
}

TEST(FissionSoftmaxMatMul, BroadcastValuesAndConstantValues) {
  const Graph g = attention_graph({2, 4, 5}, {5, 3});
  const FissionResult r =
      check_rule(g, {"ReduceMax", "Sub", "Exp", "ReduceSum", "Div", "MatMul", "Concat", "Slice"});
  ASSERT_EQ(r.alternatives.size(), 1U);
  expect_alternatives_match(g, r, 2);

  // With constant V the [V | 1] concatenation folds into a weight.
  Graph c = g;
  c.inputs = {"X"};
  c.set_constant("V", random_f32({5, 3}, 77));
  const FissionResult rc =
      check_rule(c, {"ReduceMax", "Sub", "Exp", "ReduceSum", "Div", "MatMul", "Slice"});
  ASSERT_EQ(rc.alternatives.size(), 1U);
  expect_alternatives_match(c, rc, 3);
}

TEST(FissionSoftmaxMatMul, OnlyWhenTheMatMulIsTheSoleConsumerAndEnabled) {
  const Graph g = attention_graph({2, 4, 5}, {2, 5, 3});
  FissionOptions off;
  off.softmax_matmul_alternative = false;
  EXPECT_TRUE(fission(g, off).alternatives.empty());

  Graph shared = g;
  shared.outputs.push_back("P");  // the probabilities are also a graph output
  EXPECT_TRUE(fission(shared).alternatives.empty());

  Graph inner = attention_graph({2, 4, 5}, {2, 5, 3});
  inner.nodes[0].attributes["axis"] = std::int64_t{1};  // not the contracted axis
  EXPECT_TRUE(fission(inner).alternatives.empty());
}

}  // namespace
}  // namespace orchid
