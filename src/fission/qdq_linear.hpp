// Recognises the QDQ pattern ONNX Runtime's quantize_static (QDQ format) writes around
// Conv and MatMul — DequantizeLinear(x_q) and DequantizeLinear(w_q, constant) into the
// linear op (Conv: optionally a DequantizeLinear'd int32 bias; optionally a Relu)
// followed by QuantizeLinear — and rewrites each into one QLinearConv / QLinearMatMul
// node, the int8 linear primitive (runtime/int8_linear.hpp runs it on oneDNN's int8
// kernels). Internal to src/fission/.
//
// Semantics: ONNX defines the QDQ form as a float op between dequantized operands; the
// integer form rounds once from the exact int32 accumulator, as ONNX Runtime's own QDQ
// fusion does, so a value on a rounding boundary may land one quantization step away
// from the float definition (docs/quantized_recurrent.md states the tolerance).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.hpp"

namespace orchid::fission_detail {

// Rewrites `nodes` (the model's nodes in topological order) in place. Patterns that
// match in structure but cannot use the int8 kernels (per-channel activations, weight
// zero points other than 0, uint8 weights, a Relu the output range does not absorb,
// non-2-D convolutions, ...) are left as they are — they run in fp32 after
// dequantization — and `notes` gets one line per such node saying why.
// A float constant bias is quantized to int32 in units of x_scale * w_scale (error at most
// half such a unit, far below an output step); those int32 biases are added to
// `new_constants` for the caller to put into the primitive graph.
void fuse_qdq_linear(const Graph& model, std::vector<Node>& nodes, std::vector<std::string>& notes,
                     std::map<std::string, Tensor>& new_constants);

// Whether a QLinearConv / QLinearMatMul node maps onto the int8 kernels: constant
// per-tensor x/y scales and zero points, constant int8 weights with zero weight zero
// points and per-tensor or per-output-channel scales, a 4-D Conv or a MatMul with 2-D
// weights. Otherwise fission lowers it to float primitives. `why` gets the reason.
// `constant_of` gives a tensor's constant value or nullptr.
bool int8_linear_eligible(const Node& node,
                          const std::function<const Tensor*(const std::string&)>& constant_of,
                          const std::function<const Shape&(const std::string&)>& shape_of,
                          std::string& why);

}  // namespace orchid::fission_detail
