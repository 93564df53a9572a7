#include "eval/reference/reference_kernels.hpp"

namespace orchid {

ReferenceKernel find_reference_kernel(const std::string& op_type) {
  static const ReferenceKernelTable table = [] {
    ReferenceKernelTable t;
    register_elementwise_kernels(t);
    register_reduction_kernels(t);
    register_normalization_kernels(t);
    register_linear_kernels(t);
    register_pooling_kernels(t);
    register_layout_kernels(t);
    register_constant_kernels(t);
    register_quantization_kernels(t);
    register_recurrent_kernels(t);
    register_attention_kernels(t);
    return t;
  }();
  auto it = table.find(op_type);
  return it == table.end() ? nullptr : it->second;
}

ShapingKernel find_shaping_kernel(const std::string& op_type) {
  static const ShapingKernelTable table = [] {
    ShapingKernelTable t;
    register_selection_kernels(t);
    return t;
  }();
  auto it = table.find(op_type);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace orchid
