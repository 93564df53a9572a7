// What the analytic cost model needs to know about an op type: how it accesses memory
// and whether its math is expensive. Finer than fission's PrimitiveClass (a transpose
// and a reshape are both Layout there, but only one of them strides through memory),
// and total: an op it does not know is costed as an elementwise map.
#pragma once

#include <string>
#include <unordered_map>

namespace orchid {

enum class OpKind {
  Elementwise,  // one output per element, contiguous
  Reduction,    // Reduce*, ArgMax/ArgMin, TopK, GlobalAverage/MaxPool
  Window,       // MaxPool/AveragePool/RoiAlign: windows, inputs reused from cache
  Transpose,
  Gather,
  Layout,  // reshape, slice, concat, pad, expand, resize...: data movement only
  Linear,  // MatMul, Gemm, Conv, ConvTranspose
};

struct OpTraits {
  OpKind kind = OpKind::Elementwise;
  bool transcendental = false;  // exp, erf, tanh, div...: several FLOP-equivalents each
};

inline OpTraits op_traits(const std::string& op_type) {
  static const std::unordered_map<std::string, OpTraits> table = [] {
    std::unordered_map<std::string, OpTraits> t;
    for (const char* op : {"MatMul", "Gemm", "Conv", "ConvTranspose"}) {
      t[op] = {OpKind::Linear, false};
    }
    for (const char* op :
         {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
          "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin", "TopK",
          "GlobalAveragePool", "GlobalMaxPool", "CumSum"}) {
      t[op] = {OpKind::Reduction, false};
    }
    // RoiAlign: bilinear windows at data-dependent places, inputs reused from cache.
    for (const char* op : {"MaxPool", "AveragePool", "LpPool", "RoiAlign"}) {
      t[op] = {OpKind::Window, false};
    }
    t["Transpose"] = {OpKind::Transpose, false};
    t["Gather"] = {OpKind::Gather, false};
    t["GatherElements"] = {OpKind::Gather, false};
    t["GatherND"] = {OpKind::Gather, false};
    for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Slice",
                           "Concat", "Split", "Pad", "Expand", "Tile", "Resize", "DepthToSpace",
                           "SpaceToDepth", "Dropout", "ScatterND", "ScatterElements"}) {
      t[op] = {OpKind::Layout, false};
    }
    for (const char* op : {"Exp",   "Log",  "Erf",  "Tanh",       "Sigmoid", "Softplus", "Softsign",
                           "Sqrt",  "Div",  "Pow",  "Reciprocal", "Sin",     "Cos",      "Tan",
                           "Asin",  "Acos", "Atan", "Sinh",       "Cosh",    "Asinh",    "Acosh",
                           "Atanh", "Elu",  "Selu", "Celu",       "Mish",    "Gelu",     "Mod"}) {
      t[op] = {OpKind::Elementwise, true};
    }
    return t;
  }();
  const auto it = table.find(op_type);
  return it == table.end() ? OpTraits{} : it->second;
}

}  // namespace orchid
