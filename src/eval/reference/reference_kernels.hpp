// Reference kernels: naive, obviously-correct fp32 (and integer, for shape plumbing)
// implementations of every supported op. Outputs arrive preallocated with the dtype
// and shape that shape inference computed; a kernel only fills them.
#pragma once

#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/node.hpp"
#include "ir/tensor.hpp"

namespace orchid {

// inputs[i] is nullptr for an omitted optional input.
using ReferenceKernel = void (*)(const Node& node, std::span<const Tensor* const> inputs,
                                 std::span<Tensor> outputs);
using ReferenceKernelTable = std::unordered_map<std::string, ReferenceKernel>;

// nullptr when no kernel exists for the op.
ReferenceKernel find_reference_kernel(const std::string& op_type);

// Kernels of ops whose output shapes depend on input values (NonZero,
// NonMaxSuppression): they compute and allocate their outputs themselves.
using ShapingKernel = std::vector<Tensor> (*)(const Node& node,
                                              std::span<const Tensor* const> inputs);
using ShapingKernelTable = std::unordered_map<std::string, ShapingKernel>;
ShapingKernel find_shaping_kernel(const std::string& op_type);
void register_selection_kernels(ShapingKernelTable& table);

void register_elementwise_kernels(ReferenceKernelTable& table);
void register_reduction_kernels(ReferenceKernelTable& table);
void register_normalization_kernels(ReferenceKernelTable& table);
void register_linear_kernels(ReferenceKernelTable& table);
void register_pooling_kernels(ReferenceKernelTable& table);
void register_layout_kernels(ReferenceKernelTable& table);
void register_constant_kernels(ReferenceKernelTable& table);
void register_quantization_kernels(ReferenceKernelTable& table);
void register_recurrent_kernels(ReferenceKernelTable& table);
void register_attention_kernels(ReferenceKernelTable& table);

}  // namespace orchid
