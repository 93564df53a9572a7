// Which elementwise primitives after a linear primitive (MatMul, Conv) oneDNN computes as
// post-ops of that primitive, so the linear op's result never round-trips through memory
// before its activation, bias, residual or scaling is applied.
//
// A chain is followed from the linear op's result, node by node in kernel order, while
// the running value feeds only the next node and stays inside the kernel. Each node
// becomes one post-op when the op's traits give it a oneDNN algorithm (ir/op_traits.hpp)
// and its operands fit: an eltwise (Relu, Sigmoid, Tanh, Clip with constant bounds, Max
// or Min with a constant scalar as a clip) or a binary post-op (Add, Mul, and Sub / Div
// with the chain on the left) whose other operand is an f32 tensor computed outside the
// chain that broadcasts to the result. Two activations fission spells as several
// primitives are recognised whole: swish x * Sigmoid(x) (SiLU), gelu
// x * (Erf(x / sqrt 2) + 1) * 0.5 (BERT, ViT), the scale also as Mul by 1 / sqrt 2, and
// gelu's tanh form 0.5 x (1 + Tanh(sqrt(2 / pi) (x + 0.044715 x^3))) (GPT-2, ALBERT).
// After a MatMul the chain may pass a Reshape (the same bytes) where a post-op follows
// it; from there on binary operands must be scalars.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.hpp"
#include "ir/op_traits.hpp"
#include "orchestrate/plan.hpp"
#include "util/refusable.hpp"

namespace orchid {

struct PostOp {
  enum class Kind { Binary, Eltwise } kind = Kind::Eltwise;
  OnednnAlgorithm algorithm = OnednnAlgorithm::None;
  float alpha = 0, beta = 0;  // Eltwise parameters (clip bounds, swish's beta)
  std::string operand;        // Binary: the other input

  bool operator==(const PostOp&) const = default;
};

struct EpilogueMatch {
  std::vector<PostOp> post_ops;
  std::string result;        // the chain's last tensor: what the linear stage writes
  std::size_t nodes = 1;     // kernel nodes covered, the linear one included
  std::size_t reshapes = 0;  // of them, Reshapes passed between post-ops (no work)
  std::string stopped;       // why the chain ends there ("" when the kernel ends)
};

// The epilogue of the linear primitive at kernel position `pos`.
EpilogueMatch match_epilogue(const Graph& graph, const PlannedKernel& kernel, std::size_t pos);

// `node` reading the running value `chain` as one post-op on a result of shape
// `out_shape`; `internal` are the chain's earlier values (not readable as operands).
Refusable<PostOp> as_post_op(const Graph& graph, const Node& node, const std::string& chain,
                             const Shape& out_shape, const std::set<std::string>& internal);

}  // namespace orchid
