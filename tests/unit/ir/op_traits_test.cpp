// Op traits: the one place that says what each op is to fission, the cost model, the
// fused loops and oneDNN. Checks the facts the stages rely on, and that they agree.
#include <gtest/gtest.h>

#include "ir/op_registry.hpp"
#include "ir/op_traits.hpp"

namespace orchid {
namespace {

TEST(OpTraits, AnswersForRegisteredAndUnknownOps) {
  const OpTraits& relu = op_traits("Relu");
  EXPECT_EQ(relu.primitive, PrimitiveClass::Elementwise);
  EXPECT_EQ(relu.fused.kind, FusedForm::Kind::Unary);
  EXPECT_EQ(relu.fused.unary, UnaryFn::Relu);
  EXPECT_EQ(relu.onednn, OnednnAlgorithm::EltwiseRelu);
  EXPECT_TRUE(relu.epilogue);
  EXPECT_FALSE(relu.transcendental);

  EXPECT_EQ(op_traits("Erf").onednn, OnednnAlgorithm::None);
  EXPECT_TRUE(op_traits("Erf").epilogue);  // inside GELU
  EXPECT_TRUE(op_traits("Erf").transcendental);
  EXPECT_EQ(op_traits("Conv").onednn, OnednnAlgorithm::Convolution);
  EXPECT_EQ(op_traits("Conv").access, AccessPattern::Linear);
  EXPECT_EQ(op_traits("ReduceMean").fused.reduce, ReduceFn::Mean);
  EXPECT_EQ(op_traits("Expand").primitive, PrimitiveClass::ReduceBroadcast);
  EXPECT_EQ(op_traits("Expand").access, AccessPattern::Layout);
  EXPECT_EQ(op_traits("Where").fused.kind, FusedForm::Kind::Select);
  EXPECT_TRUE(op_traits("Shape").structural);
  EXPECT_FALSE(op_traits("Softmax").primitive);  // a fission rule rewrites it
  EXPECT_FALSE(op_traits("HardSwish").primitive);
  EXPECT_EQ(op_traits("Gemm").access, AccessPattern::Linear);

  const OpTraits& unknown = op_traits("NoSuchOp");
  EXPECT_FALSE(unknown.primitive);
  EXPECT_EQ(unknown.fused.kind, FusedForm::Kind::None);
  EXPECT_EQ(unknown.onednn, OnednnAlgorithm::None);
  EXPECT_EQ(&op_traits("NoSuchOp"), &unknown);
}

TEST(OpTraits, TheTraitsAgreeWithEachOther) {
  for (const std::string& op : supported_op_types()) {
    SCOPED_TRACE(op);
    const OpTraits& t = find_op_schema(op)->traits;
    EXPECT_EQ(&t, &op_traits(op));
    // Linear primitives are linear for the cost model; reductions a loop computes are
    // reduce primitives; what a loop computes per element is an elementwise primitive.
    if (t.primitive == PrimitiveClass::Linear) {
      EXPECT_EQ(t.access, AccessPattern::Linear);
    }
    if (t.fused.kind == FusedForm::Kind::Reduce) {
      EXPECT_EQ(t.primitive, PrimitiveClass::ReduceBroadcast);
      EXPECT_EQ(t.access, AccessPattern::Reduction);
    }
    if (t.fused.kind == FusedForm::Kind::Unary || t.fused.kind == FusedForm::Kind::Binary) {
      EXPECT_EQ(t.primitive, PrimitiveClass::Elementwise);
    }
    // An op folded into a linear epilogue is an elementwise primitive.
    if (t.epilogue) {
      EXPECT_EQ(t.primitive, PrimitiveClass::Elementwise);
    }
  }
}

}  // namespace
}  // namespace orchid
