// Reference kernels of the constant op family.
#include "runtime/reference/reference_kernels.hpp"

namespace orchid {

void register_constant_kernels(ReferenceKernelTable& table) { (void)table; }

}  // namespace orchid
