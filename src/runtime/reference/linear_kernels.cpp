// Reference kernels of the linear op family.
#include "runtime/reference/reference_kernels.hpp"

namespace orchid {

void register_linear_kernels(ReferenceKernelTable& table) { (void)table; }

}  // namespace orchid
