// Every op's traits (ir/op_traits.hpp), listed per trait so each list reads as one fact.
// apply_op_traits() writes them into the registered schemas; ops a list names that orchid
// does not register are ignored.
#include <initializer_list>

#include "ir/ops/op_families.hpp"

namespace orchid {

namespace {

using Names = std::initializer_list<const char*>;

template <typename Set>
void for_each(OpSchemaTable& table, Names ops, Set set) {
  for (const char* op : ops) {
    if (auto it = table.find(op); it != table.end()) set(it->second.traits);
  }
}

void primitive_classes(OpSchemaTable& table) {
  // Every op of the elementwise family is a primitive, except the few whose canonical
  // form is other primitives (a fission rule rewrites them). Taking the names from the
  // family's registration keeps the two lists from drifting apart.
  OpSchemaTable elementwise;
  register_elementwise_ops(elementwise);
  for (const auto& [op, schema] : elementwise) {
    if (op == "HardSigmoid" || op == "HardSwish" || op == "Sum" || op == "Mean" ||
        op == "CastLike" || op == "Gelu" || op == "Mish" || op == "Swish") {
      continue;
    }
    if (auto it = table.find(op); it != table.end()) {
      it->second.traits.primitive = PrimitiveClass::Elementwise;
    }
  }
  // RoiAlign pools bilinear samples per bin, a data-dependent window.
  for_each(table,
           {"ReduceSum", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ArgMax", "ArgMin",
            "TopK", "MaxPool", "AveragePool", "RoiAlign", "Expand", "CumSum"},
           [](OpTraits& t) { t.primitive = PrimitiveClass::ReduceBroadcast; });
  // Col2Im sums overlapping blocks back into an image: per output element a gather of
  // at most prod(block) inputs, memory-bound like the other layout ops.
  for_each(table,
           {"Transpose", "Reshape", "Slice", "Concat", "Pad", "Gather", "Resize", "Identity",
            "ScatterND", "GatherElements", "GatherND", "ScatterElements", "Col2Im"},
           [](OpTraits& t) { t.primitive = PrimitiveClass::Layout; });
  for_each(table, {"MatMul", "Conv", "ConvTranspose"},
           [](OpTraits& t) { t.primitive = PrimitiveClass::Linear; });
  // int8 linear primitives (fission keeps those oneDNN's int8 kernels compute).
  for_each(table, {"QLinearConv", "QLinearMatMul"},
           [](OpTraits& t) { t.primitive = PrimitiveClass::Linear; });
}

void access_patterns(OpSchemaTable& table) {
  auto access = [](AccessPattern a) { return [a](OpTraits& t) { t.access = a; }; };
  for_each(table, {"MatMul", "Gemm", "Conv", "ConvTranspose", "QLinearConv", "QLinearMatMul"},
           access(AccessPattern::Linear));
  for_each(table,
           {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
            "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin",
            "TopK", "GlobalAveragePool", "GlobalMaxPool", "CumSum"},
           access(AccessPattern::Reduction));
  // RoiAlign: bilinear windows at data-dependent places, inputs reused from cache.
  for_each(table, {"MaxPool", "AveragePool", "LpPool", "RoiAlign"}, access(AccessPattern::Window));
  for_each(table, {"Transpose"}, access(AccessPattern::Transpose));
  for_each(table, {"Gather", "GatherElements", "GatherND"}, access(AccessPattern::Gather));
  for_each(table,
           {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Slice", "Concat", "Split",
            "Pad", "Expand", "Tile", "Resize", "DepthToSpace", "SpaceToDepth", "Dropout",
            "ScatterND", "ScatterElements", "Col2Im"},
           access(AccessPattern::Layout));
  for_each(table, {"Exp",   "Log",  "Erf",  "Tanh",       "Sigmoid", "Softplus", "Softsign",
                   "Sqrt",  "Div",  "Pow",  "Reciprocal", "Sin",     "Cos",      "Tan",
                   "Asin",  "Acos", "Atan", "Sinh",       "Cosh",    "Asinh",    "Acosh",
                   "Atanh", "Elu",  "Selu", "Celu",       "Mish",    "Gelu",     "Mod"},
           [](OpTraits& t) { t.transcendental = true; });
}

void fused_forms(OpSchemaTable& table) {
  auto unary = [&](const char* op, UnaryFn f) {
    for_each(table, {op}, [f](OpTraits& t) {
      t.fused.kind = FusedForm::Kind::Unary;
      t.fused.unary = f;
    });
  };
  unary("Relu", UnaryFn::Relu);
  unary("Sigmoid", UnaryFn::Sigmoid);
  unary("Tanh", UnaryFn::Tanh);
  unary("Exp", UnaryFn::Exp);
  unary("Log", UnaryFn::Log);
  unary("Sqrt", UnaryFn::Sqrt);
  unary("Reciprocal", UnaryFn::Reciprocal);
  unary("Neg", UnaryFn::Neg);
  unary("Abs", UnaryFn::Abs);
  unary("Erf", UnaryFn::Erf);
  unary("Softplus", UnaryFn::Softplus);
  unary("Floor", UnaryFn::Floor);
  unary("Ceil", UnaryFn::Ceil);
  unary("Sin", UnaryFn::Sin);
  unary("Cos", UnaryFn::Cos);
  unary("LeakyRelu", UnaryFn::LeakyRelu);
  unary("Elu", UnaryFn::Elu);
  unary("Clip", UnaryFn::Clip);
  auto binary = [&](const char* op, BinaryFn f) {
    for_each(table, {op}, [f](OpTraits& t) {
      t.fused.kind = FusedForm::Kind::Binary;
      t.fused.binary = f;
    });
  };
  binary("Add", BinaryFn::Add);
  binary("Sub", BinaryFn::Sub);
  binary("Mul", BinaryFn::Mul);
  binary("Div", BinaryFn::Div);
  binary("Pow", BinaryFn::Pow);
  binary("Max", BinaryFn::Max);
  binary("Min", BinaryFn::Min);
  binary("PRelu", BinaryFn::PRelu);
  for_each(table, {"Where"}, [](OpTraits& t) { t.fused.kind = FusedForm::Kind::Select; });
  auto reduce = [&](const char* op, ReduceFn f) {
    for_each(table, {op}, [f](OpTraits& t) {
      t.fused.kind = FusedForm::Kind::Reduce;
      t.fused.reduce = f;
    });
  };
  reduce("ReduceSum", ReduceFn::Sum);
  reduce("ReduceMean", ReduceFn::Mean);
  reduce("ReduceMax", ReduceFn::Max);
  reduce("ReduceMin", ReduceFn::Min);
  // Constant-mode Pad writes a fill value and linear Resize blends several elements, and a
  // Concat is one only of parts of one tensor: the fused loop checks those
  // (runtime/fused/fused_loop.cpp).
  for_each(
      table,
      {"Transpose", "Reshape", "Slice", "Expand", "Identity", "Gather", "Pad", "Resize", "Concat"},
      [](OpTraits& t) { t.fused.kind = FusedForm::Kind::DataMove; });
}

void onednn_algorithms(OpSchemaTable& table) {
  auto algorithm = [&](const char* op, OnednnAlgorithm a) {
    for_each(table, {op}, [a](OpTraits& t) { t.onednn = a; });
  };
  algorithm("Relu", OnednnAlgorithm::EltwiseRelu);
  algorithm("Sigmoid", OnednnAlgorithm::EltwiseLogistic);
  algorithm("Tanh", OnednnAlgorithm::EltwiseTanh);
  algorithm("Clip", OnednnAlgorithm::EltwiseClip);
  algorithm("Add", OnednnAlgorithm::BinaryAdd);
  algorithm("Sub", OnednnAlgorithm::BinarySub);
  algorithm("Mul", OnednnAlgorithm::BinaryMul);
  algorithm("Div", OnednnAlgorithm::BinaryDiv);
  algorithm("Max", OnednnAlgorithm::BinaryMax);
  algorithm("Min", OnednnAlgorithm::BinaryMin);
  algorithm("Conv", OnednnAlgorithm::Convolution);
  algorithm("MatMul", OnednnAlgorithm::MatMul);
  algorithm("MaxPool", OnednnAlgorithm::PoolingMax);
  algorithm("AveragePool", OnednnAlgorithm::PoolingAverage);
  algorithm("Resize", OnednnAlgorithm::ResamplingLinear);
  for_each(table,
           {"Add", "Mul", "Sub", "Div", "Relu", "Clip", "Sigmoid", "Tanh", "Max", "Min", "Erf"},
           [](OpTraits& t) { t.epilogue = true; });
}

void structural_ops(OpSchemaTable& table) {
  for_each(table,
           {"Reshape", "Transpose", "Flatten",  "Squeeze",         "Unsqueeze",    "Identity",
            "Shape",   "Gather",    "Concat",   "Split",           "Slice",        "Cast",
            "Expand",  "Dropout",   "Constant", "ConstantOfShape", "Range",        "Tile",
            "Pad",     "Size",      "Where",    "Equal",           "DepthToSpace", "SpaceToDepth"},
           [](OpTraits& t) { t.structural = true; });
}

}  // namespace

void apply_op_traits(OpSchemaTable& table) {
  primitive_classes(table);
  access_patterns(table);
  fused_forms(table);
  onednn_algorithms(table);
  structural_ops(table);
}

}  // namespace orchid
