// Reference kernels of the reduction op family.
#include "runtime/reference/reference_kernels.hpp"

namespace orchid {

void register_reduction_kernels(ReferenceKernelTable& table) { (void)table; }

}  // namespace orchid
