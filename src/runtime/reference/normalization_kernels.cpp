// Reference kernels of the normalization op family.
#include "runtime/reference/reference_kernels.hpp"

namespace orchid {

void register_normalization_kernels(ReferenceKernelTable& table) { (void)table; }

}  // namespace orchid
