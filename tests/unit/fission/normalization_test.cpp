// Operator fission: LayerNorm, InstanceNorm, BatchNorm and LpNorm rules.
#include "fission/fission_test_util.hpp"

namespace orchid {
namespace {

using namespace fission_test;

// ---------------------------------------------------------------- normalizations

TEST(FissionLayerNorm, WithBiasOverLastAxis) {
  const Graph g = single_op_graph("LayerNormalization",
                                  {{"x", random_f32({2, 3, 8}, 5)},
                                   {"scale", random_f32({8}, 6), true},
                                   {"bias", random_f32({8}, 7), true}},
                                  {{"epsilon", 1e-3F}});
  const FissionResult r = check_rule(g, {"ReduceMean", "Sub", "Mul", "Add", "Sqrt", "Div"});
  EXPECT_EQ(op_types(r.graph).count("ReduceMean"), 2U);
  EXPECT_EQ(op_types(r.graph).count("Mul"), 2U);  // square and scale
  EXPECT_EQ(op_types(r.graph).count("Add"), 2U);  // epsilon and bias
}

TEST(FissionLayerNorm, NoBiasInnerAxisAndStatisticsOutputs) {
  const Graph g =
      single_op_graph("LayerNormalization",
                      {{"x", random_f32({2, 3, 4}, 8)}, {"scale", random_f32({3, 4}, 9), true}},
                      {{"axis", std::int64_t{1}}}, 3);
  const FissionResult r =
      check_rule(g, {"ReduceMean", "Sub", "Mul", "Add", "Sqrt", "Div", "Reciprocal"});
  EXPECT_EQ(op_types(r.graph).count("Add"), 1U);
}

TEST(FissionInstanceNorm, ScaleAndBiasBecomeC11Constants) {
  const Graph g = single_op_graph("InstanceNormalization", {{"x", random_f32({2, 3, 4, 5}, 10)},
                                                            {"scale", random_f32({3}, 11), true},
                                                            {"bias", random_f32({3}, 12), true}});
  const FissionResult r = check_rule(g, {"ReduceMean", "Sub", "Mul", "Add", "Sqrt", "Div"});
  bool saw_c11 = false;
  for (const Node& node : r.graph.nodes) {
    for (const auto& in : node.inputs) {
      const TensorInfo& t = r.graph.tensor(in);
      if (t.is_constant() && t.shape == Shape{3, 1, 1}) saw_c11 = true;
    }
  }
  EXPECT_TRUE(saw_c11);
}

TEST(FissionBatchNorm, ConstantStatisticsFoldIntoMulAdd) {
  const Graph g = single_op_graph("BatchNormalization",
                                  {{"x", random_f32({2, 4, 3, 3}, 13)},
                                   {"gamma", random_f32({4}, 14), true},
                                   {"beta", random_f32({4}, 15), true},
                                   {"mean", random_f32({4}, 16), true},
                                   {"var", random_f32({4}, 17, 0.1F, 2.0F), true}},
                                  {{"epsilon", 1e-3F}});
  const FissionResult r = check_rule(g, {"Mul", "Add"});
  EXPECT_EQ(r.graph.nodes.size(), 2U);
  // The statistics are gone; only the folded [C,1,1] scale and shift remain.
  EXPECT_EQ(r.graph.weights().size(), 2U);
  for (const auto& w : r.graph.weights()) EXPECT_EQ(r.graph.tensor(w).shape, (Shape{4, 1, 1}));
}

TEST(FissionBatchNorm, RuntimeStatisticsAndRank2) {
  Graph g = single_op_graph("BatchNormalization", {{"x", random_f32({5, 4}, 18)},
                                                   {"gamma", random_f32({4}, 19)},
                                                   {"beta", random_f32({4}, 20)},
                                                   {"mean", random_f32({4}, 21)},
                                                   {"var", random_f32({4}, 22)}});
  TensorMap feed = make_random_inputs(g, 3);
  feed["var"] = random_f32({4}, 23, 0.1F, 2.0F);
  check_rule(g, {"Mul", "Add", "Sqrt", "Div", "Sub"}, feed);
}

TEST(FissionLpNorm, P1AndP2) {
  check_rule(
      single_op_graph("LpNormalization", {{"x", random_f32({3, 5}, 24)}}, {{"p", std::int64_t{1}}}),
      {"Abs", "ReduceSum", "Div"});
  check_rule(single_op_graph("LpNormalization", {{"x", random_f32({3, 5}, 25)}},
                             {{"axis", std::int64_t{0}}}),
             {"Mul", "ReduceSum", "Sqrt", "Div"});
}

}  // namespace
}  // namespace orchid
