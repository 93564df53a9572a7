// Operator fission: Pooling (global, window, RoiAlign) and activation rules.
#include "fission/fission_test_util.hpp"

namespace orchid {
namespace {

using namespace fission_test;

// ---------------------------------------------------------------- pooling, activations

TEST(FissionPooling, GlobalPoolsAreKeepdimsReductions) {
  const FissionResult r = check_rule(
      single_op_graph("GlobalAveragePool", {{"x", random_f32({2, 3, 4, 5}, 44)}}), {"ReduceMean"});
  EXPECT_EQ(r.graph.nodes[0].attr_ints("axes", {}), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(r.graph.nodes[0].attr_int("keepdims", 0), 1);
  check_rule(single_op_graph("GlobalMaxPool", {{"x", random_f32({2, 3, 4}, 45)}}), {"ReduceMax"});
}

TEST(FissionPooling, WindowPoolsArePrimitives) {
  const Attrs window{{"kernel_shape", std::vector<std::int64_t>{3, 3}},
                     {"strides", std::vector<std::int64_t>{2, 2}},
                     {"pads", std::vector<std::int64_t>{1, 1, 1, 1}}};
  const FissionResult r = check_rule(
      single_op_graph("MaxPool", {{"x", random_f32({1, 2, 7, 7}, 46)}}, window), {"MaxPool"});
  EXPECT_EQ(classes(r), (std::map<PrimitiveClass, std::size_t>{{kReduce, 1}}));
  check_rule(single_op_graph("AveragePool", {{"x", random_f32({1, 2, 7, 7}, 47)}}, window),
             {"AveragePool"});
}

TEST(FissionActivations, HardSigmoidAndHardSwish) {
  const Tensor x = random_f32({4, 16}, 48, -5.0F, 5.0F);
  TensorMap feed{{"x", x}};
  check_rule(single_op_graph("HardSigmoid", {{"x", x}}, {{"alpha", 0.3F}, {"beta", 0.4F}}),
             {"Mul", "Add", "Clip"}, feed);
  check_rule(single_op_graph("HardSwish", {{"x", x}}), {"Mul", "Add", "Clip"}, feed);
}

TEST(FissionActivations, PrimitiveActivationsPassThrough) {
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Softplus", "LeakyRelu", "Elu"}) {
    check_rule(single_op_graph(op, {{"x", random_f32({3, 4}, 49)}}), {op});
  }
}

TEST(FissionPooling, RoiAlignIsAPrimitive) {
  const FissionResult r = check_rule(
      single_op_graph("RoiAlign",
                      {{"x", random_f32({2, 3, 6, 6}, 66)},
                       {"rois", f32({2, 4}, {0.5f, 1, 4, 5.5f, 1, 0, 3, 2})},
                       {"b", i64({2}, {1, 0}), true}},
                      {{"output_height", std::int64_t{2}}, {"output_width", std::int64_t{3}}}),
      {"RoiAlign"});
  EXPECT_EQ(classes(r), (std::map<PrimitiveClass, std::size_t>{{kReduce, 1}}));
}

}  // namespace
}  // namespace orchid
