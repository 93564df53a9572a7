// Operator fission: one test per rule (the op alone, fissioned, must contain only
// primitives of the expected ops and compute the same outputs), the softmax·V
// alternative, and every zoo model end to end. Outputs are compared elementwise with
// |fissioned - original| <= 1e-5 + 1e-4 * |original| for single ops; zoo models use
// |a - b| <= 2e-5 * (1 + max|original|) + 1e-4 * |original| per output, since rounding
// of reassociated arithmetic (folded BatchNorm, f32 instead of f64 statistics) adds up
// over dozens of layers; the worst seen is about 2e-6 * (1 + max|original|).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <set>

#include "fission/fission.hpp"
#include "fission/primitive.hpp"
#include "onnx/onnx_writer.hpp"
#include "op_test_util.hpp"
#include "passes/load_model.hpp"
#include "runtime/random_inputs.hpp"
#include "runtime/reference_interpreter.hpp"

namespace fs = std::filesystem;

namespace orchid {
namespace {

using testing::f32;
using testing::i64;
using testing::OpInput;
using testing::single_op_graph;
using Attrs = std::map<std::string, Attribute>;

std::multiset<std::string> op_types(const Graph& g) {
  std::multiset<std::string> ops;
  for (const Node& node : g.nodes) ops.insert(node.op_type);
  return ops;
}

std::set<std::string> distinct_ops(const Graph& g) {
  const auto ops = op_types(g);
  return {ops.begin(), ops.end()};
}

Tensor random_f32(Shape shape, std::uint64_t seed, float lo = -1.0F, float hi = 1.0F) {
  Tensor t(DType::F32, std::move(shape));
  std::uint64_t state = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (float& v : t.values<float>()) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u = static_cast<double>(state >> 11) / 9007199254740992.0;
    v = lo + static_cast<float>(u) * (hi - lo);
  }
  return t;
}

// `worst`, when given, receives max over outputs of max|a - b| / (1 + max|b|).
::testing::AssertionResult outputs_match(const Graph& original, const Graph& fissioned,
                                         const TensorMap& feed, double atol, double rtol,
                                         bool scale_atol = false, double* worst = nullptr) {
  const TensorMap expected = ReferenceInterpreter(original).run(feed);
  const TensorMap actual = ReferenceInterpreter(fissioned).run(feed);
  if (worst) *worst = 0;
  for (const auto& name : original.outputs) {
    const Tensor& a = actual.at(name);
    const Tensor& b = expected.at(name);
    double peak = 0, diff = 0;
    for (std::int64_t i = 0; i < b.numel() && a.shape() == b.shape(); ++i) {
      peak = std::max(peak, std::fabs(b.get_as_double(i)));
      diff = std::max(diff, std::fabs(a.get_as_double(i) - b.get_as_double(i)));
    }
    if (worst) *worst = std::max(*worst, diff / (1.0 + peak));
    auto r = testing::tensors_close(a, b, rtol, scale_atol ? atol * (1.0 + peak) : atol);
    if (!r) return r << " (output " << name << ")";
  }
  return ::testing::AssertionSuccess();
}

// Fissions `g`, checks it holds only primitives whose ops are exactly `expected_ops`,
// that every node has an origin, and that it computes what `g` computes on `feed`
// (random inputs when empty).
FissionResult check_rule(const Graph& g, const std::set<std::string>& expected_ops,
                         TensorMap feed = {}) {
  FissionResult r = fission(g);
  EXPECT_NO_THROW(r.graph.validate());
  for (const Node& node : r.graph.nodes) {
    EXPECT_TRUE(is_primitive(node)) << node.describe();
    EXPECT_TRUE(r.origin.count(node.name)) << node.name << " has no origin";
  }
  EXPECT_EQ(distinct_ops(r.graph), expected_ops) << r.graph.to_string();
  EXPECT_EQ(r.graph.inputs, g.inputs);
  EXPECT_EQ(r.graph.outputs, g.outputs);
  if (feed.empty()) feed = make_random_inputs(g, 7);
  EXPECT_TRUE(outputs_match(g, r.graph, feed, 1e-5, 1e-4)) << r.graph.to_string();
  return r;
}

std::map<PrimitiveClass, std::size_t> classes(const FissionResult& r) {
  return primitive_class_histogram(r.graph);
}

constexpr auto kElementwise = PrimitiveClass::Elementwise;
constexpr auto kReduce = PrimitiveClass::ReduceBroadcast;
constexpr auto kLayout = PrimitiveClass::Layout;
constexpr auto kLinear = PrimitiveClass::Linear;

// ---------------------------------------------------------------- primitive set

TEST(FissionPrimitive, ClassesAndCanonicalForms) {
  Node n;
  n.name = "n";
  n.outputs = {"y"};
  n.inputs = {"a", "b"};
  n.op_type = "Add";
  EXPECT_EQ(primitive_class(n), kElementwise);
  n.op_type = "MatMul";
  EXPECT_EQ(primitive_class(n), kLinear);
  n.op_type = "Expand";
  EXPECT_EQ(primitive_class(n), kReduce);
  n.op_type = "Transpose";
  EXPECT_EQ(primitive_class(n), kLayout);
  n.op_type = "Softmax";
  EXPECT_FALSE(is_primitive(n));
  EXPECT_THROW(primitive_class(n), Error);
  n.op_type = "Max";  // variadic forms are canonicalised to binary ones
  n.inputs = {"a", "b", "c"};
  EXPECT_FALSE(is_primitive(n));
  n.op_type = "Conv";  // bias is a separate Add
  EXPECT_FALSE(is_primitive(n));
  n.inputs = {"x", "w"};
  EXPECT_TRUE(is_primitive(n));
  EXPECT_EQ(primitive_class_name(kReduce), "reduce/broadcast");
}

TEST(FissionCoverage, EveryRegistryOpHasARuleOrIsAPrimitive) {
  EXPECT_EQ(fission_op_types(), supported_op_types());
}

TEST(FissionCoverage, UnknownDomainIsRefusedNamingTheNode) {
  Graph g = single_op_graph("Relu", {{"x", f32({2}, {1, -1})}});
  g.nodes[0].domain = "com.example";
  try {
    fission(g);
    FAIL() << "expected UnsupportedError";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("'n0'"), std::string::npos) << e.what();
  }
}

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

// ---------------------------------------------------------------- linear

TEST(FissionGemm, TransposedConstantBFoldsAndAlphaGoesIntoTheWeight) {
  const Graph g = single_op_graph("Gemm",
                                  {{"a", random_f32({3, 4}, 26)},
                                   {"b", random_f32({5, 4}, 27), true},
                                   {"c", random_f32({5}, 28), true}},
                                  {{"transB", std::int64_t{1}}, {"alpha", 0.5F}, {"beta", 2.0F}});
  const FissionResult r = check_rule(g, {"MatMul", "Add"});
  EXPECT_EQ(classes(r), (std::map<PrimitiveClass, std::size_t>{{kElementwise, 1}, {kLinear, 1}}));
}

TEST(FissionGemm, RuntimeOperandsTransposeA) {
  const Graph g = single_op_graph(
      "Gemm",
      {{"a", random_f32({4, 3}, 29)}, {"b", random_f32({4, 5}, 30)}, {"c", random_f32({3, 5}, 31)}},
      {{"transA", std::int64_t{1}}, {"alpha", 1.5F}, {"beta", 0.5F}});
  check_rule(g, {"Transpose", "MatMul", "Mul", "Add"});
}

TEST(FissionGemm, PlainIsOneMatMul) {
  const Graph g =
      single_op_graph("Gemm", {{"a", random_f32({2, 3}, 32)}, {"b", random_f32({3, 4}, 33)}});
  const FissionResult r = check_rule(g, {"MatMul"});
  EXPECT_EQ(r.graph.nodes.size(), 1U);
}

TEST(FissionConv, BiasBecomesAnAdd) {
  const Graph g = single_op_graph(
      "Conv",
      {{"x", random_f32({1, 4, 6, 6}, 34)},
       {"w", random_f32({6, 2, 3, 3}, 35), true},
       {"b", random_f32({6}, 36), true}},
      {{"group", std::int64_t{2}}, {"pads", std::vector<std::int64_t>{1, 1, 1, 1}}});
  const FissionResult r = check_rule(g, {"Conv", "Add"});
  EXPECT_EQ(r.graph.nodes[0].name, "n0");  // the linear primitive keeps the model's name
  EXPECT_EQ(r.graph.nodes[0].inputs.size(), 2U);
}

TEST(FissionConv, WithoutBiasPassesThrough) {
  const Graph g = single_op_graph(
      "Conv", {{"x", random_f32({1, 2, 5, 5}, 37)}, {"w", random_f32({3, 2, 3, 3}, 38), true}});
  const FissionResult r = check_rule(g, {"Conv"});
  EXPECT_EQ(r.origin.at("n0"), "n0");
}

TEST(FissionConv, ConvTransposeBias) {
  const Graph g = single_op_graph("ConvTranspose",
                                  {{"x", random_f32({1, 3, 4, 4}, 39)},
                                   {"w", random_f32({3, 2, 3, 3}, 40), true},
                                   {"b", random_f32({2}, 41), true}},
                                  {{"strides", std::vector<std::int64_t>{2, 2}}});
  check_rule(g, {"ConvTranspose", "Add"});
}

TEST(FissionLinear, MatMulPassesThrough) {
  check_rule(
      single_op_graph("MatMul", {{"a", random_f32({2, 3, 4}, 42)}, {"b", random_f32({4, 5}, 43)}}),
      {"MatMul"});
}

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

// ---------------------------------------------------------------- shape ops

TEST(FissionShapeOps, FlattenSqueezeUnsqueezeReshapeAreStaticReshapes) {
  FissionResult r =
      check_rule(single_op_graph("Flatten", {{"x", random_f32({2, 3, 4}, 63)}}), {"Reshape"});
  EXPECT_EQ(r.graph.tensor(r.graph.nodes[0].inputs[1]).data->to_int64s(),
            (std::vector<std::int64_t>{2, 12}));
  check_rule(
      single_op_graph("Squeeze", {{"x", random_f32({2, 1, 4}, 64)}, {"axes", i64({1}, {1}), true}}),
      {"Reshape"});
  check_rule(single_op_graph("Unsqueeze",
                             {{"x", random_f32({2, 4}, 65)}, {"axes", i64({2}, {0, -1}), true}}),
             {"Reshape"});
  r = check_rule(single_op_graph(
                     "Reshape", {{"x", random_f32({2, 3, 4}, 66)}, {"s", i64({2}, {0, -1}), true}}),
                 {"Reshape"});
  EXPECT_EQ(r.graph.tensor(r.graph.nodes[0].inputs[1]).data->to_int64s(),
            (std::vector<std::int64_t>{2, 12}));
}

TEST(FissionShapeOps, SplitBecomesSlices) {
  const Graph g = single_op_graph(
      "Split", {{"x", random_f32({2, 7}, 67)}, {"split", i64({3}, {2, 4, 1}), true}},
      {{"axis", std::int64_t{1}}}, 3);
  const FissionResult r = check_rule(g, {"Slice"});
  EXPECT_EQ(r.graph.nodes.size(), 3U);
  check_rule(single_op_graph("Split", {{"x", random_f32({6, 2}, 68)}}, {}, 2), {"Slice"});
}

TEST(FissionShapeOps, TileIsReshapeExpandReshape) {
  check_rule(
      single_op_graph("Tile", {{"x", random_f32({2, 3}, 69)}, {"r", i64({2}, {2, 3}), true}}),
      {"Reshape", "Expand"});
  // Repeating unit axes is a plain broadcast.
  check_rule(
      single_op_graph("Tile", {{"x", random_f32({1, 3}, 70)}, {"r", i64({2}, {4, 1}), true}}),
      {"Expand"});
}

TEST(FissionShapeOps, IdentityAndDropoutDisappear) {
  // Relu(Identity(Dropout(x))): only the Relu remains, reading x directly.
  Graph g;
  g.name = "chain";
  g.set_type("x", DType::F32, {2, 3});
  g.inputs = {"x"};
  g.outputs = {"y"};
  g.nodes.push_back(Node{"d", "Dropout", "", {}, {"x"}, {"t1"}});
  g.nodes.push_back(Node{"i", "Identity", "", {}, {"t1"}, {"t2"}});
  g.nodes.push_back(Node{"r", "Relu", "", {}, {"t2"}, {"t3"}});
  g.nodes.push_back(Node{"o", "Identity", "", {}, {"t3"}, {"y"}});
  infer_shapes(g);
  const FissionResult r = check_rule(g, {"Relu"});
  EXPECT_EQ(r.graph.nodes[0].inputs[0], "x");
  EXPECT_EQ(r.graph.nodes[0].outputs[0], "y");  // the graph output's name is kept
}

TEST(FissionShapeOps, NoOpPrimitivesDisappear) {
  // Relu(Concat(Expand(Cast(Transpose(x, identity perm), f32), same shape))).
  Graph g;
  g.name = "noops";
  g.set_type("x", DType::F32, {2, 3});
  g.set_constant("shape", i64({2}, {2, 3}));
  g.inputs = {"x"};
  g.outputs = {"y"};
  g.nodes.push_back(
      Node{"t", "Transpose", "", {{"perm", std::vector<std::int64_t>{0, 1}}}, {"x"}, {"t1"}});
  g.nodes.push_back(Node{"c", "Cast", "", {{"to", std::int64_t{1}}}, {"t1"}, {"t2"}});
  g.nodes.push_back(Node{"e", "Expand", "", {}, {"t2", "shape"}, {"t3"}});
  g.nodes.push_back(Node{"k", "Concat", "", {{"axis", std::int64_t{0}}}, {"t3"}, {"t4"}});
  g.nodes.push_back(Node{"r", "Relu", "", {}, {"t4"}, {"y"}});
  infer_shapes(g);
  const FissionResult r = check_rule(g, {"Relu"});
  EXPECT_EQ(r.graph.nodes[0].inputs[0], "x");
}

TEST(FissionNames, UnnamedNodesGetUniqueNamesAndEveryPrimitiveAnOrigin) {
  Graph g;
  g.name = "unnamed";
  g.set_type("x", DType::F32, {2, 3});
  g.inputs = {"x"};
  g.outputs = {"y"};
  g.nodes.push_back(Node{"", "Softmax", "", {}, {"x"}, {"s"}});
  g.nodes.push_back(Node{"Softmax_0", "Relu", "", {}, {"s"}, {"y"}});  // clashes on purpose
  infer_shapes(g);
  const FissionResult r = check_rule(g, {"ReduceMax", "Sub", "Exp", "ReduceSum", "Div", "Relu"});
  std::set<std::string> origins;
  for (const auto& [prim, op] : r.origin) origins.insert(op);
  EXPECT_EQ(origins, (std::set<std::string>{"Softmax_0", "Softmax_0_1"}));
  for (const Node& node : r.graph.nodes) {
    if (node.op_type == "Exp") {
      EXPECT_EQ(node.outputs[0], "Softmax_0_1/fission/exp");
    }
  }
}

TEST(FissionShapeOps, DepthToSpaceAndSpaceToDepth) {
  const Tensor x = random_f32({1, 8, 2, 3}, 71);
  check_rule(single_op_graph("DepthToSpace", {{"x", x}}, {{"blocksize", std::int64_t{2}}}),
             {"Reshape", "Transpose"});
  check_rule(single_op_graph("DepthToSpace", {{"x", x}},
                             {{"blocksize", std::int64_t{2}}, {"mode", std::string("CRD")}}),
             {"Reshape", "Transpose"});
  check_rule(single_op_graph("SpaceToDepth", {{"x", random_f32({1, 2, 4, 6}, 72)}},
                             {{"blocksize", std::int64_t{2}}}),
             {"Reshape", "Transpose"});
}

TEST(FissionShapeOps, LayoutPrimitivesPassThrough) {
  check_rule(single_op_graph("Transpose", {{"x", random_f32({2, 3, 4}, 73)}},
                             {{"perm", std::vector<std::int64_t>{2, 0, 1}}}),
             {"Transpose"});
  check_rule(
      single_op_graph("Concat", {{"a", random_f32({2, 3}, 74)}, {"b", random_f32({2, 1}, 75)}},
                      {{"axis", std::int64_t{1}}}),
      {"Concat"});
  check_rule(
      single_op_graph("Gather", {{"x", random_f32({4, 3}, 76)}, {"i", i64({2}, {3, 0}), true}}),
      {"Gather"});
  const FissionResult nd = check_rule(
      single_op_graph("GatherND",
                      {{"x", random_f32({2, 3, 4}, 77)}, {"i", i64({2, 1}, {2, -1}), true}},
                      {{"batch_dims", std::int64_t{1}}}),
      {"GatherND"});
  EXPECT_EQ(classes(nd), (std::map<PrimitiveClass, std::size_t>{{kLayout, 1}}));
  check_rule(single_op_graph("ScatterElements",
                             {{"d", random_f32({3, 4}, 78)},
                              {"i", i64({1, 2}, {2, 0}), true},
                              {"u", random_f32({1, 2}, 79)}},
                             {{"axis", std::int64_t{1}}, {"reduction", std::string("add")}}),
             {"ScatterElements"});
}

// ---------------------------------------------------------------- constants

TEST(FissionConstants, ShapeOfARuntimeTensorFeedsAReshape) {
  // Reshape(x, Shape(z)): the Shape folds, so only a static Reshape remains.
  Graph g;
  g.name = "shape";
  g.set_type("x", DType::F32, {6});
  g.set_type("z", DType::F32, {2, 3});
  g.inputs = {"x", "z"};
  g.outputs = {"y"};
  g.nodes.push_back(Node{"s", "Shape", "", {}, {"z"}, {"zs"}});
  g.nodes.push_back(Node{"r", "Reshape", "", {}, {"x", "zs"}, {"y"}});
  // Shape inference needs a constant Reshape target, so the types are set by hand here
  // (load_model would fold the Shape first); fission folds it itself.
  g.set_type("zs", DType::I64, {2});
  g.set_type("y", DType::F32, {2, 3});
  g.validate();
  const FissionResult r = check_rule(g, {"Reshape"});
  EXPECT_EQ(r.graph.tensor(r.graph.nodes[0].inputs[1]).data->to_int64s(),
            (std::vector<std::int64_t>{2, 3}));
}

TEST(FissionConstants, ConstantOpAsGraphOutput) {
  const FissionResult r =
      fission(single_op_graph("ConstantOfShape", {{"s", i64({2}, {2, 3}), true}}));
  EXPECT_EQ(distinct_ops(r.graph), (std::set<std::string>{"Identity"}));
  const TensorMap out = ReferenceInterpreter(r.graph).run({});
  EXPECT_EQ(out.at("y0").shape(), (Shape{2, 3}));
}

// ---------------------------------------------------------------- softmax · V

// Graph: Y = Softmax(X) · V, X [x_shape], V [v_shape].
Graph attention_graph(const Shape& x_shape, const Shape& v_shape) {
  Graph g;
  g.name = "attention";
  g.set_type("X", DType::F32, x_shape);
  g.set_type("V", DType::F32, v_shape);
  g.inputs = {"X", "V"};
  g.outputs = {"Y"};
  g.nodes.push_back(Node{"softmax", "Softmax", "", {{"axis", std::int64_t{-1}}}, {"X"}, {"P"}});
  g.nodes.push_back(Node{"matmul", "MatMul", "", {}, {"P", "V"}, {"Y"}});
  infer_shapes(g);
  g.validate();
  return g;
}

// Runs the alternative subgraphs by exposing their tensors as extra outputs, and
// checks each equals the tensor it stands for.
void expect_alternatives_match(const Graph& model, const FissionResult& r, std::uint64_t seed,
                               double atol = 1e-5, double rtol = 1e-4) {
  Graph probe = r.graph;
  for (const auto& [alt, main] : r.alternatives) {
    probe.outputs.push_back(alt);
    if (std::find(probe.outputs.begin(), probe.outputs.end(), main) == probe.outputs.end()) {
      probe.outputs.push_back(main);
    }
  }
  const TensorMap out = ReferenceInterpreter(probe).run(make_random_inputs(model, seed));
  for (const auto& [alt, main] : r.alternatives) {
    EXPECT_TRUE(testing::tensors_close(out.at(alt), out.at(main), rtol, atol))
        << alt << " vs " << main;
  }
}

// Nodes the graph outputs need; none of them may read an alternative tensor. Returns
// how many nodes only alternatives need.
std::size_t expect_main_graph_ignores_alternatives(const FissionResult& r) {
  const auto producers = r.graph.producers();
  std::set<std::string> needed(r.graph.outputs.begin(), r.graph.outputs.end());
  std::vector<std::string> stack(needed.begin(), needed.end());
  while (!stack.empty()) {
    const std::string t = stack.back();
    stack.pop_back();
    auto p = producers.find(t);
    if (p == producers.end()) continue;
    for (const auto& in : r.graph.nodes[p->second].inputs) {
      if (!in.empty() && needed.insert(in).second) stack.push_back(in);
    }
  }
  for (const auto& [alt, main] : r.alternatives) EXPECT_FALSE(needed.count(alt)) << alt;
  std::size_t extra = 0;
  for (const Node& node : r.graph.nodes) extra += needed.count(node.outputs[0]) ? 0 : 1;
  return extra;
}

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

// ---------------------------------------------------------------- zoo end to end

std::vector<std::string> zoo_models() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(ORCHID_MODELS_DIR)) {
    if (entry.path().extension() == ".onnx") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class FissionZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(FissionZoo, PrimitiveGraphComputesTheModel) {
  const std::string path = (fs::path(ORCHID_MODELS_DIR) / (GetParam() + ".onnx")).string();
  const Graph model = load_model(path).graph;
  if (const Node* dynamic = model.first_dynamic_node()) {
    // Detection post-processing (ssdlite320): refused, naming the first such node.
    try {
      (void)fission(model);
      FAIL() << "fission accepted data-dependent shapes";
    } catch (const UnsupportedError& e) {
      EXPECT_NE(std::string(e.what()).find(dynamic->describe()), std::string::npos) << e.what();
    }
    return;
  }
  const FissionResult r = fission(model);
  for (const Node& node : r.graph.nodes) {
    ASSERT_TRUE(is_primitive(node)) << node.describe();
    ASSERT_TRUE(r.origin.count(node.name)) << node.name;
  }
  const std::size_t alternative_only = expect_main_graph_ignores_alternatives(r);
  const TensorMap feed = make_random_inputs(model, 0);
  double worst = 0;
  EXPECT_TRUE(outputs_match(model, r.graph, feed, 2e-5, 1e-4, true, &worst));

  const auto hist = primitive_class_histogram(r.graph);
  std::size_t total = 0;
  for (const auto& [c, n] : hist) total += n;
  EXPECT_EQ(total, r.graph.nodes.size());
  std::string line =
      fmt::format("[fission] {}: {} ops -> {} primitives (", GetParam(), model.nodes.size(), total);
  for (const auto& [c, n] : hist) line += fmt::format(" {} {}", primitive_class_name(c), n);
  line += fmt::format(
      " ), {} of them only in {} softmax-matmul alternatives, max error {:.1e} of (1 + max|y|)",
      alternative_only, r.alternatives.size(), worst);
  std::cout << line << "\n";
  RecordProperty("primitives", static_cast<int>(total));
}

TEST(FissionZooAlternatives, AttentionModelsOfferReassociatedSoftmax) {
  for (const char* name : {"tiny_attention", "bert_base", "vit_b_16"}) {
    const std::string path = (fs::path(ORCHID_MODELS_DIR) / (std::string(name) + ".onnx")).string();
    if (!fs::exists(path)) continue;
    const Graph model = load_model(path).graph;
    const FissionResult r = fission(model);
    EXPECT_FALSE(r.alternatives.empty()) << name;
    if (std::string(name) == "tiny_attention") expect_alternatives_match(model, r, 0, 1e-5, 1e-3);
  }
}

TEST(FissionZooOnnx, PrimitiveGraphRoundTripsThroughOnnx) {
  // A primitive graph is an ordinary graph: it writes to ONNX and loads back unchanged
  // in behaviour (alternatives included, as dead nodes).
  const std::string path = (fs::path(ORCHID_MODELS_DIR) / "tiny_attention.onnx").string();
  const Graph model = load_model(path).graph;
  const FissionResult r = fission(model);
  const fs::path out = fs::temp_directory_path() / "orchid_fission_tiny_attention.onnx";
  write_onnx(r.graph, out.string());
  const Graph back = load_model(out.string()).graph;
  fs::remove(out);
  for (const Node& node : back.nodes) EXPECT_TRUE(is_primitive(node)) << node.describe();
  EXPECT_TRUE(outputs_match(model, back, make_random_inputs(model, 1), 1e-5, 1e-4));
}

INSTANTIATE_TEST_SUITE_P(FissionModels, FissionZoo, ::testing::ValuesIn(zoo_models()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace orchid
