// Data-dependent shapes: NonZero and NonMaxSuppression (known values from the ONNX
// spec's examples), dynamic tensors through make_static and the reference interpreter,
// If with constant and run-time conditions, and the optimizers refusing such graphs.
#include <gtest/gtest.h>

#include <limits>

#include "eval/reference_interpreter.hpp"
#include "fission/fission.hpp"
#include "ir/op_registry.hpp"
#include "op_test_util.hpp"
#include "passes/static_graph.hpp"
#include "passes/static_part.hpp"

namespace orchid {
namespace {

using testing::f32;
using testing::i64;
using testing::run_single_op;

Node make_node(const std::string& name, const std::string& op, std::vector<std::string> inputs,
               std::vector<std::string> outputs, std::map<std::string, Attribute> attrs = {}) {
  Node n;
  n.name = name;
  n.op_type = op;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attributes = std::move(attrs);
  return n;
}

TEST(DynamicShapes, NonZeroListsCoordinatesInRowMajorOrder) {
  const Tensor x = f32({2, 3}, {1, 0, 2, 0, 0, -3});
  const auto out = run_single_op("NonZero", {{"x", x}});
  EXPECT_EQ(out[0], i64({2, 3}, {0, 0, 1, 0, 2, 2}));
  const auto none = run_single_op("NonZero", {{"x", f32({2, 2}, {0, 0, 0, 0})}});
  EXPECT_EQ(none[0].shape(), (Shape{2, 0}));
}

// ONNX's test_nonmaxsuppression_suppress_by_IOU: six boxes, three kept.
const std::vector<float> kBoxes = {0, 0,  1, 1,  0, 0.1f,  1, 1.1f,  0, -0.1f, 1, 0.9f,
                                   0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100,   1, 101};
const std::vector<float> kScores = {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f};

std::vector<Tensor> nms(std::int64_t max_boxes, float iou, float score) {
  return run_single_op("NonMaxSuppression", {{"boxes", f32({1, 6, 4}, kBoxes)},
                                             {"scores", f32({1, 1, 6}, kScores)},
                                             {"max", i64({1}, {max_boxes})},
                                             {"iou", f32({1}, {iou})},
                                             {"score", f32({1}, {score})}});
}

TEST(DynamicShapes, NonMaxSuppressionKeepsTheSpecExamplesBoxes) {
  EXPECT_EQ(nms(3, 0.5f, 0.0f)[0], i64({3, 3}, {0, 0, 3, 0, 0, 0, 0, 0, 5}));
  // The limit per class, and the score threshold (strictly above it).
  EXPECT_EQ(nms(2, 0.5f, 0.0f)[0], i64({2, 3}, {0, 0, 3, 0, 0, 0}));
  EXPECT_EQ(nms(3, 0.5f, 0.4f)[0], i64({2, 3}, {0, 0, 3, 0, 0, 0}));
  // Exporters (torchvision) pass INT64_MAX for "no limit": every surviving box.
  EXPECT_EQ(nms(std::numeric_limits<std::int64_t>::max(), 0.5f, 0.0f)[0].shape(), (Shape{3, 3}));
  // No limit given at all means zero boxes (the spec's default).
  const auto none = run_single_op("NonMaxSuppression", {{"boxes", f32({1, 6, 4}, kBoxes)},
                                                        {"scores", f32({1, 1, 6}, kScores)}});
  EXPECT_EQ(none[0].shape(), (Shape{0, 3}));
}

TEST(DynamicShapes, NonMaxSuppressionCenterPointBoxes) {
  // test_nonmaxsuppression_center_point_box_format: [x_center, y_center, w, h].
  const std::vector<float> centers = {0.5f, 0.5f,  1, 1, 0.5f, 0.6f,  1, 1, 0.5f, 0.4f,   1, 1,
                                      0.5f, 10.5f, 1, 1, 0.5f, 10.6f, 1, 1, 0.5f, 100.5f, 1, 1};
  const auto out = run_single_op("NonMaxSuppression",
                                 {{"boxes", f32({1, 6, 4}, centers)},
                                  {"scores", f32({1, 1, 6}, kScores)},
                                  {"max", i64({1}, {3})},
                                  {"iou", f32({1}, {0.5f})},
                                  {"score", f32({1}, {0.0f})}},
                                 {{"center_point_box", std::int64_t{1}}});
  EXPECT_EQ(out[0], i64({3, 3}, {0, 0, 3, 0, 0, 0, 0, 0, 5}));
}

// x -> NonZero -> Transpose -> ReduceSum(axis 0) -> y: y's length is the number of
// non-zeros, so the graph is dynamic from NonZero on.
Graph nonzero_chain() {
  Graph g;
  g.name = "chain";
  g.set_type("x", DType::F32, {2, 3});
  g.inputs = {"x"};
  g.set_constant("axes", i64({1}, {0}));
  g.nodes.push_back(make_node("nz", "NonZero", {"x"}, {"idx"}));
  g.nodes.push_back(make_node("tr", "Transpose", {"idx"}, {"t"}));
  g.nodes.push_back(
      make_node("sum", "ReduceSum", {"idx", "axes"}, {"y"}, {{"keepdims", std::int64_t{0}}}));
  g.nodes.push_back(make_node("shape", "Shape", {"t"}, {"s"}));
  g.outputs = {"y", "s"};
  return g;
}

TEST(DynamicShapes, MakeStaticLeavesDataDependentTensorsDynamic) {
  Graph g = nonzero_chain();
  const StaticGraphStats stats = make_static(g);
  EXPECT_EQ(stats.dynamic_nodes, 4u);
  EXPECT_TRUE(g.is_dynamic("idx"));
  EXPECT_TRUE(g.is_dynamic("s"));  // Shape of a dynamic tensor is not folded
  EXPECT_FALSE(g.tensor("y").has_type);
  ASSERT_NE(g.first_dynamic_node(), nullptr);
  EXPECT_EQ(g.first_dynamic_node()->name, "nz");

  ReferenceInterpreter interpreter(g);
  TensorMap out = interpreter.run({{"x", f32({2, 3}, {1, 0, 2, 0, 0, -3})}});
  EXPECT_EQ(out.at("y"), i64({3}, {0, 2, 3}));  // (0,0), (0,2), (1,2) summed per point
  EXPECT_EQ(out.at("s"), i64({2}, {3, 2}));
  out = interpreter.run({{"x", f32({2, 3}, {0, 0, 0, 0, 5, 0})}});
  EXPECT_EQ(out.at("y"), i64({1}, {2}));
  EXPECT_EQ(out.at("s"), i64({2}, {1, 2}));
}

TEST(DynamicShapes, ConstantInputsFoldEvenWhenShapesDependOnValues) {
  Graph g;
  g.name = "folded";
  g.set_constant("c", f32({4}, {0, 1, 0, 1}));
  g.set_type("x", DType::I64, {1, 2});
  g.inputs = {"x"};
  g.nodes.push_back(make_node("nz", "NonZero", {"c"}, {"idx"}));
  g.nodes.push_back(make_node("add", "Add", {"x", "idx"}, {"y"}));
  g.outputs = {"y"};
  const StaticGraphStats stats = make_static(g);
  EXPECT_EQ(stats.folded_nodes, 1u);
  EXPECT_EQ(stats.dynamic_nodes, 0u);
  EXPECT_EQ(g.tensor("y").shape, (Shape{1, 2}));
  EXPECT_EQ(g.first_dynamic_node(), nullptr);
}

// Past the size limit a constant node still folds when its result is no larger than its
// largest input (a weight's Transpose: ALBERT's 4096 x 16384 ones ran in every inference),
// but not when it would grow (an Expand), nor once such folds have made as many bytes as
// the graph's constants hold.
TEST(StaticGraph, FoldsBeyondTheLimitOnlyWhatIsNoLargerThanItsInputs) {
  Graph g;
  g.name = "big_constants";
  std::vector<float> w(24);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i);
  g.set_constant("w", f32({4, 6}, w));
  g.set_constant("one", f32({1}, {2.0f}));
  g.set_constant("to", i64({1}, {30}));
  g.set_type("x", DType::F32, {3, 4});
  g.inputs = {"x"};
  g.nodes.push_back(
      make_node("t", "Transpose", {"w"}, {"wt"}, {{"perm", std::vector<std::int64_t>{1, 0}}}));
  // A second one would take the graph's constants past twice their bytes: left to run.
  g.nodes.push_back(
      make_node("t2", "Transpose", {"w"}, {"wt2"}, {{"perm", std::vector<std::int64_t>{1, 0}}}));
  g.nodes.push_back(make_node("mm", "MatMul", {"x", "w"}, {"y"}));
  g.nodes.push_back(make_node("e", "Expand", {"one", "to"}, {"big"}));
  g.outputs = {"y", "wt", "wt2", "big"};
  StaticGraphOptions options;
  options.max_folded_elements = 10;
  make_static(g, options);
  ASSERT_TRUE(g.is_constant("wt"));
  EXPECT_EQ(g.tensor("wt").data->get_as_double(1), 6.0);  // wt[0][1] = w[1][0]
  EXPECT_FALSE(g.is_constant("wt2"));
  EXPECT_FALSE(g.is_constant("big"));
  EXPECT_EQ(g.nodes.size(), 3u);  // the second Transpose, MatMul and Expand
}

TEST(DynamicShapes, ShapeInputComputedAtRunTimeMakesTheNodeDynamic) {
  // Reshape's target shape is a graph input: previously refused, now sized per run.
  Graph g;
  g.name = "reshape";
  g.set_type("x", DType::F32, {2, 3});
  g.set_type("shape", DType::I64, {2});
  g.inputs = {"x", "shape"};
  g.nodes.push_back(make_node("r", "Reshape", {"x", "shape"}, {"y"}));
  g.outputs = {"y"};
  make_static(g);
  EXPECT_TRUE(g.is_dynamic("y"));
  const TensorMap out = ReferenceInterpreter(g).run(
      {{"x", f32({2, 3}, {1, 2, 3, 4, 5, 6})}, {"shape", i64({2}, {3, -1})}});
  EXPECT_EQ(out.at("y"), f32({3, 2}, {1, 2, 3, 4, 5, 6}));
}

// If(cond) then y = x * 2 else y = NonZero(x)-count-sized; both branches read x from
// the outer scope (the importer's form: outer values are branch inputs after cond).
Graph if_graph(bool same_shapes) {
  auto then_branch = std::make_shared<Graph>();
  then_branch->name = "then";
  then_branch->inputs = {"x"};
  then_branch->add_tensor("x");
  then_branch->set_constant("two", f32({}, {2}));
  then_branch->nodes.push_back(make_node("double", "Mul", {"x", "two"}, {"t_out"}));
  then_branch->outputs = {"t_out"};
  auto else_branch = std::make_shared<Graph>();
  else_branch->name = "else";
  else_branch->inputs = {"x"};
  else_branch->add_tensor("x");
  if (same_shapes) {
    else_branch->nodes.push_back(make_node("neg", "Neg", {"x"}, {"e_out"}));
  } else {
    else_branch->nodes.push_back(make_node("nz", "NonZero", {"x"}, {"e_out"}));
  }
  else_branch->outputs = {"e_out"};

  Graph g;
  g.name = "if";
  g.set_type("x", DType::F32, {3});
  g.set_type("cond", DType::Bool, {});
  g.inputs = {"cond", "x"};
  Node n = make_node("choose", "If", {"cond", "x"}, {"y"});
  n.subgraphs["then_branch"] = then_branch;
  n.subgraphs["else_branch"] = else_branch;
  g.nodes.push_back(n);
  g.outputs = {"y"};
  return g;
}

// fission's refusal of a graph it must not take; empty when it accepts the graph.
std::string fission_refusal(const Graph& g) {
  try {
    (void)fission(g);
  } catch (const UnsupportedError& e) {
    return e.what();
  }
  return "";
}

Tensor boolean(bool v) {
  Tensor t(DType::Bool, {});
  t.values<bool>()[0] = v;
  return t;
}

TEST(DynamicShapes, IfWithRunTimeConditionRunsTheChosenBranch) {
  Graph g = if_graph(false);
  make_static(g);
  EXPECT_TRUE(g.is_dynamic("y"));  // the branches disagree on shape
  ReferenceInterpreter interpreter(g);
  const Tensor x = f32({3}, {1, 0, 3});
  EXPECT_EQ(interpreter.run({{"cond", boolean(true)}, {"x", x}}).at("y"), f32({3}, {2, 0, 6}));
  EXPECT_EQ(interpreter.run({{"cond", boolean(false)}, {"x", x}}).at("y"), i64({1, 2}, {0, 2}));
}

TEST(DynamicShapes, IfWhoseBranchesAgreeHasStaticOutputsButStillRefusesFission) {
  Graph g = if_graph(true);
  make_static(g);
  ASSERT_TRUE(g.tensor("y").has_type);
  EXPECT_EQ(g.tensor("y").shape, (Shape{3}));
  EXPECT_EQ(
      ReferenceInterpreter(g).run({{"cond", boolean(false)}, {"x", f32({3}, {1, 2, 3})}}).at("y"),
      f32({3}, {-1, -2, -3}));
  const std::string msg = fission_refusal(g);
  ASSERT_FALSE(msg.empty()) << "fission accepted control flow";
  EXPECT_NE(msg.find("static shapes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("If node 'choose'"), std::string::npos) << msg;
}

TEST(DynamicShapes, IfWithConstantConditionIsReplacedByItsBranch) {
  for (bool cond : {true, false}) {
    Graph g = if_graph(false);
    g.inputs = {"x"};
    g.set_constant("cond", boolean(cond));
    const StaticGraphStats stats = make_static(g);
    EXPECT_EQ(stats.inlined_branches, 1u);
    for (const Node& n : g.nodes) EXPECT_NE(n.op_type, "If");
    const TensorMap out = ReferenceInterpreter(g).run({{"x", f32({3}, {1, 0, 3})}});
    if (cond) {
      EXPECT_EQ(g.first_dynamic_node(), nullptr);  // the static branch: fully static
      EXPECT_EQ(out.at("y"), f32({3}, {2, 0, 6}));
    } else {
      EXPECT_TRUE(g.is_dynamic("y"));
      EXPECT_EQ(out.at("y"), i64({1, 2}, {0, 2}));
    }
  }
}

// Loop(M, cond, acc0) over body(i, cond, acc) -> (cond', Concat(acc, x), x * i): the
// carried value grows each iteration, the scan output stacks, x comes from outside.
Graph loop_graph(bool stop_after_two) {
  auto body = std::make_shared<Graph>();
  body->name = "body";
  body->inputs = {"i", "cond_in", "acc", "x"};
  for (const auto& name : body->inputs) body->add_tensor(name);
  body->metadata[kLoopStateInputsKey] = "3";
  body->set_constant("one", i64({}, {1}));
  body->nodes.push_back(
      make_node("grow", "Concat", {"acc", "x"}, {"acc_next"}, {{"axis", std::int64_t{0}}}));
  body->nodes.push_back(make_node("as_float", "Cast", {"i"}, {"i_f"}, {{"to", std::int64_t{1}}}));
  body->nodes.push_back(make_node("scale", "Mul", {"x", "i_f"}, {"scan_val"}));
  if (stop_after_two) {
    body->nodes.push_back(make_node("more", "Less", {"i", "one"}, {"cond_out"}));
  } else {
    body->nodes.push_back(make_node("keep", "Identity", {"cond_in"}, {"cond_out"}));
  }
  body->outputs = {"cond_out", "acc_next", "scan_val"};

  Graph g;
  g.name = "loop";
  g.set_type("x", DType::F32, {2});
  g.inputs = {"x"};
  g.set_constant("M", i64({}, {4}));
  Tensor cond(DType::Bool, {});
  cond.values<bool>()[0] = true;
  g.set_constant("cond", cond);
  g.set_constant("acc0", f32({1}, {9}));
  Node n = make_node("repeat", "Loop", {"M", "cond", "acc0", "x"}, {"acc_final", "scans"});
  n.subgraphs["body"] = body;
  g.nodes.push_back(n);
  g.outputs = {"acc_final", "scans"};
  return g;
}

TEST(DynamicShapes, LoopCarriesGrowingValuesAndStacksScans) {
  Graph g = loop_graph(false);
  make_static(g);
  EXPECT_TRUE(g.is_dynamic("acc_final"));
  const TensorMap out = ReferenceInterpreter(g).run({{"x", f32({2}, {1, 2})}});
  EXPECT_EQ(out.at("acc_final"), f32({9}, {9, 1, 2, 1, 2, 1, 2, 1, 2}));
  EXPECT_EQ(out.at("scans"), f32({4, 2}, {0, 0, 1, 2, 2, 4, 3, 6}));
}

TEST(DynamicShapes, LoopStopsWhenTheBodySaysSo) {
  Graph g = loop_graph(true);
  make_static(g);
  const TensorMap out = ReferenceInterpreter(g).run({{"x", f32({2}, {1, 2})}});
  EXPECT_EQ(out.at("acc_final"), f32({5}, {9, 1, 2, 1, 2}));  // i = 0, 1, then 1 < 1 fails
  EXPECT_EQ(out.at("scans"), f32({2, 2}, {0, 0, 1, 2}));
}

TEST(DynamicShapes, StaticPartKeepsWhatRunsBeforeTheDataDependentNodes) {
  // x -> Relu -> r -> NonZero ...: the static part is the Relu, its output r.
  Graph g = nonzero_chain();
  g.nodes.insert(g.nodes.begin(), make_node("relu", "Relu", {"x"}, {"r"}));
  g.nodes[1].inputs = {"r"};
  make_static(g);
  const Graph part = static_part(g);
  ASSERT_EQ(part.nodes.size(), 1u);
  EXPECT_EQ(part.nodes[0].name, "relu");
  EXPECT_EQ(part.outputs, (std::vector<std::string>{"r"}));
  // A static graph comes back as it is; one dynamic from its input has no static part.
  EXPECT_EQ(static_part(part).nodes.size(), 1u);
  Graph from_input = nonzero_chain();
  make_static(from_input);
  try {
    (void)static_part(from_input);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NonZero node 'nz'"), std::string::npos) << e.what();
  }
}

TEST(DynamicShapes, OptimizersRefuseDynamicGraphsNamingTheNode) {
  Graph g = nonzero_chain();
  make_static(g);
  const std::string msg = fission_refusal(g);
  ASSERT_FALSE(msg.empty()) << "fission accepted a dynamic graph";
  EXPECT_NE(msg.find("NonZero node 'nz'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4 node(s)"), std::string::npos) << msg;
}

}  // namespace
}  // namespace orchid
