// Operator fission: Variadic elementwise ops, Sum of one input, CastLike.
#include "fission/fission_test_util.hpp"

namespace orchid {
namespace {

using namespace fission_test;

// ---------------------------------------------------------------- elementwise

TEST(FissionElementwise, VariadicBecomesBinaryChains) {
  const std::vector<OpInput> three{
      {"a", random_f32({2, 3}, 50)}, {"b", random_f32({3}, 51)}, {"c", random_f32({2, 1}, 52)}};
  FissionResult r = check_rule(single_op_graph("Sum", three), {"Add"});
  EXPECT_EQ(r.graph.nodes.size(), 2U);
  r = check_rule(single_op_graph("Mean", three), {"Add", "Div"});
  r = check_rule(single_op_graph("Max", three), {"Max"});
  EXPECT_EQ(r.graph.nodes.size(), 2U);
  check_rule(single_op_graph("Min", {{"a", random_f32({2, 3}, 53)}, {"b", random_f32({2, 3}, 54)}}),
             {"Min"});
}

TEST(FissionElementwise, SingleInputSumIsAnIdentityBetweenGraphInputAndOutput) {
  // A graph input passed straight to an output is the one place an Identity survives.
  const FissionResult r =
      check_rule(single_op_graph("Sum", {{"a", random_f32({2, 3}, 55)}}), {"Identity"});
  EXPECT_EQ(classes(r), (std::map<PrimitiveClass, std::size_t>{{kLayout, 1}}));
}

TEST(FissionElementwise, CastLikeIsCast) {
  check_rule(single_op_graph("CastLike", {{"a", random_f32({2, 3}, 56)}, {"b", i64({1}, {0})}}),
             {"Cast"});
}

}  // namespace
}  // namespace orchid
