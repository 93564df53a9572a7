// Operator fission: Constant ops and shapes of runtime tensors.
#include "fission/fission_test_util.hpp"

namespace orchid {
namespace {

using namespace fission_test;

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

}  // namespace
}  // namespace orchid
