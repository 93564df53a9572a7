// f16/bf16 models on executors that compute f32 (the CPU plan executor, the generated
// device code): a copy of the graph in which every half-float tensor is f32. Weights
// are widened exactly; Cast nodes to f16/bf16 become casts to f32; graph inputs and
// outputs become f32 (the caller casts at the boundary: widen_feed, narrow_outputs).
// Intermediate results are then not rounded to 16 bits after each op, so results are at
// least as precise as the model's own arithmetic (CPUs without fp16 arithmetic compute
// f32 anyway); they differ from the reference interpreter, which rounds every tensor to
// its dtype, by about the model's own rounding error.
#pragma once

#include "eval/reference_interpreter.hpp"
#include "ir/graph.hpp"

namespace orchid {

bool has_half_floats(const Graph& graph);

// Throws UnsupportedError naming the node when an op's f32 form is not what the model
// computes (e.g. an attribute that names a 16-bit dtype orchid does not rewrite).
Graph widen_half_floats(const Graph& graph);

// Half-float input tensors cast to f32, others unchanged.
TensorMap widen_feed(const TensorMap& feed);
// Outputs cast back to the dtypes `model` declares for them.
TensorMap narrow_outputs(const Graph& model, const TensorMap& outputs);

}  // namespace orchid
