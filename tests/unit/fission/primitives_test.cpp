// Operator fission: The primitive set and the registry coverage of the fission rules.
#include "fission/fission_test_util.hpp"

namespace orchid {
namespace {

using namespace fission_test;

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

}  // namespace
}  // namespace orchid
