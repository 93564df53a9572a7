// Operator fission: Reductions: canonical axes, composed reductions, ArgMax, TopK.
#include "fission/fission_test_util.hpp"

namespace orchid {
namespace {

using namespace fission_test;

// ---------------------------------------------------------------- reductions

TEST(FissionReduce, CanonicalAxes) {
  const FissionResult r = check_rule(
      single_op_graph("ReduceSum",
                      {{"x", random_f32({2, 3, 4}, 57)}, {"axes", i64({2}, {-1, 0}), true}},
                      {{"keepdims", std::int64_t{0}}}),
      {"ReduceSum"});
  const Tensor& axes = *r.graph.tensor(r.graph.nodes[0].inputs[1]).data;
  EXPECT_EQ(axes.to_int64s(), (std::vector<std::int64_t>{0, 2}));
  const FissionResult all =
      check_rule(single_op_graph("ReduceMean", {{"x", random_f32({2, 3}, 58)}}), {"ReduceMean"});
  EXPECT_EQ(all.graph.nodes[0].attr_ints("axes", {}), (std::vector<std::int64_t>{0, 1}));
  for (const char* op : {"ReduceMax", "ReduceMin", "ReduceProd"}) {
    check_rule(single_op_graph(op, {{"x", random_f32({2, 3, 4}, 59)}},
                               {{"axes", std::vector<std::int64_t>{1}}}),
               {op});
  }
}

TEST(FissionReduce, ComposedReductions) {
  const Attrs attrs{{"axes", std::vector<std::int64_t>{-1}}, {"keepdims", std::int64_t{0}}};
  const std::vector<OpInput> x{{"x", random_f32({3, 5}, 60)}};
  check_rule(single_op_graph("ReduceL1", x, attrs), {"Abs", "ReduceSum"});
  check_rule(single_op_graph("ReduceL2", x, attrs), {"Mul", "ReduceSum", "Sqrt"});
  check_rule(single_op_graph("ReduceSumSquare", x, attrs), {"Mul", "ReduceSum"});
  const Graph log_sum = single_op_graph("ReduceLogSum", x, attrs);
  check_rule(log_sum, {"ReduceSum", "Log"}, TensorMap{{"x", random_f32({3, 5}, 61, 0.1F, 1.0F)}});
  check_rule(single_op_graph("ReduceLogSumExp", x, attrs),
             {"ReduceMax", "Sub", "Exp", "ReduceSum", "Log", "Add", "Reshape"});
  check_rule(single_op_graph("ReduceLogSumExp", x, {{"axes", std::vector<std::int64_t>{0}}}),
             {"ReduceMax", "Sub", "Exp", "ReduceSum", "Log", "Add"});
}

TEST(FissionReduce, ArgMaxIsAPrimitive) {
  check_rule(
      single_op_graph("ArgMax", {{"x", random_f32({3, 5}, 62)}}, {{"axis", std::int64_t{1}}}),
      {"ArgMax"});
}

TEST(FissionReduce, TopKValuesOnlyIsAPrimitiveWithAnExplicitAxis) {
  const OpInput k{"k", i64({1}, {2}), true};
  // Values only (the Indices output omitted), default axis -1.
  const FissionResult r =
      check_rule(single_op_graph("TopK", {{"x", random_f32({3, 5}, 63)}, k}, {}, 1), {"TopK"});
  EXPECT_EQ(r.graph.nodes[0].attr_int("axis", -1), 1);
  EXPECT_EQ(classes(r), (std::map<PrimitiveClass, std::size_t>{{kReduce, 1}}));
  // Both outputs named, but nothing reads Indices: it is dropped.
  Graph g = single_op_graph("TopK", {{"x", random_f32({4, 3}, 64)}, k},
                            {{"axis", std::int64_t{0}}, {"largest", std::int64_t{0}}}, 2);
  g.outputs = {"y0"};
  const FissionResult d = check_rule(g, {"TopK"});
  EXPECT_EQ(d.graph.nodes[0].outputs, (std::vector<std::string>{"y0"}));
}

TEST(FissionReduce, TopKIndicesAreRefusedNamingTheNode) {
  Graph g =
      single_op_graph("TopK", {{"x", random_f32({3, 5}, 65)}, {"k", i64({1}, {2}), true}}, {}, 2);
  try {
    fission(g);
    FAIL() << "expected UnsupportedError";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("TopK node 'n0'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Indices"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace orchid
