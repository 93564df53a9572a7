// What orchid knows about an op type beyond its shapes, in one place: each stage asks
// these traits instead of keeping its own table of op names. The op schema carries them
// (OpSchema::traits); op_traits() answers for any op type (unknown ops get the defaults:
// not a primitive, elementwise access, no fused or oneDNN form).
#pragma once

#include <optional>
#include <string>

namespace orchid {

// Fission's target classes (see fission/primitive.hpp).
enum class PrimitiveClass {
  Elementwise,      // Add, Mul, Exp, Erf, Relu, Sigmoid, Where, Cast, ... (same-shape maps)
  ReduceBroadcast,  // ReduceSum/Max/Mean over axes, Expand, MaxPool/AveragePool windows
  Layout,           // Transpose, Reshape, Slice, Concat, Pad, Gather, Resize, Identity
  Linear,           // MatMul (batched), Conv, ConvTranspose
};

// How an op walks memory, for the analytic cost model. Finer than PrimitiveClass (a
// transpose and a reshape are both Layout there, but only one strides through memory).
enum class AccessPattern {
  Elementwise,  // one output per element, contiguous
  Reduction,    // Reduce*, ArgMax/ArgMin, TopK, GlobalAverage/MaxPool, CumSum
  Window,       // MaxPool/AveragePool/RoiAlign: windows, inputs reused from cache
  Transpose,
  Gather,
  Layout,  // reshape, slice, concat, pad, expand, resize...: data movement only
  Linear,  // MatMul, Gemm, Conv, ConvTranspose
};

// The per-element functions a fused loop computes.
enum class UnaryFn {
  Relu,
  Sigmoid,
  Tanh,
  Exp,
  Log,
  Sqrt,
  Reciprocal,
  Neg,
  Abs,
  Erf,
  Softplus,
  Floor,
  Ceil,
  Sin,
  Cos,
  LeakyRelu,
  Elu,
  Clip
};
enum class BinaryFn { Add, Sub, Mul, Div, Pow, Max, Min, PRelu };
enum class ReduceFn { Sum, Mean, Max, Min };

// How a fused loop (runtime/fused) computes the op, if it can.
struct FusedForm {
  enum class Kind {
    None,
    Unary,     // `unary` of input 0 (attributes or constant inputs give its parameters)
    Binary,    // `binary` of inputs 0 and 1, broadcast
    Select,    // Where
    Reduce,    // `reduce` over trailing axes
    DataMove,  // moves elements only (an index map), attributes permitting
  } kind = Kind::None;
  UnaryFn unary = UnaryFn::Relu;
  BinaryFn binary = BinaryFn::Add;
  ReduceFn reduce = ReduceFn::Sum;
};

// oneDNN's algorithm for the op, named at the IR level (ir/ does not see oneDNN; the
// runtime maps these to dnnl::algorithm).
enum class OnednnAlgorithm {
  None,
  EltwiseRelu,
  EltwiseLogistic,
  EltwiseTanh,
  EltwiseClip,
  BinaryAdd,
  BinarySub,
  BinaryMul,
  BinaryDiv,
  BinaryMax,
  BinaryMin,
  Convolution,
  MatMul,
  PoolingMax,
  PoolingAverage,
  ResamplingLinear,
  // No single op has these: the epilogue matcher recognises them in fissioned chains.
  EltwiseSwish,      // x * Sigmoid(x)
  EltwiseGeluErf,    // x * (Erf(x / sqrt 2) + 1) * 0.5
  EltwiseGeluTanh,   // 0.5 x (1 + Tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
  EltwiseHardSwish,  // x * Clip(x / 6 + 0.5, 0, 1)
};

struct OpTraits {
  // The class in a primitive graph; nullopt when a fission rule rewrites the op into
  // other primitives (Softmax, Gemm, norms, HardSwish, ...).
  std::optional<PrimitiveClass> primitive;
  AccessPattern access = AccessPattern::Elementwise;
  bool transcendental = false;  // exp, erf, tanh, div...: several FLOP-equivalents each
  FusedForm fused;
  OnednnAlgorithm onednn = OnednnAlgorithm::None;
  // May be folded after a linear primitive as (part of) a oneDNN post-op: the ops with
  // an eltwise or binary algorithm, and Erf (the core of GELU, one composite post-op).
  bool epilogue = false;
  // Shape plumbing, data movement and masks: no arithmetic that a mapping workload
  // counts as a layer of its own.
  bool structural = false;
};

// The traits of `op_type` (defaults for an unknown op).
const OpTraits& op_traits(const std::string& op_type);

// Whether the op's output holds its first input's elements in the same order (Reshape,
// Flatten, Squeeze, Unsqueeze, Identity): the same bytes in another shape.
inline bool keeps_flat_order(const std::string& op_type) {
  return op_type == "Reshape" || op_type == "Flatten" || op_type == "Squeeze" ||
         op_type == "Unsqueeze" || op_type == "Identity";
}

}  // namespace orchid
