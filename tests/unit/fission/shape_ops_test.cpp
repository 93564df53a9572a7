// Operator fission: Shape and layout ops: reshapes, Split, Tile, Identity/Dropout, DepthToSpace.
#include "fission/fission_test_util.hpp"

namespace orchid {
namespace {

using namespace fission_test;

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

}  // namespace
}  // namespace orchid
