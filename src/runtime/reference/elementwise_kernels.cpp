// Reference kernels of the elementwise op family.
#include "runtime/reference/reference_kernels.hpp"

namespace orchid {

void register_elementwise_kernels(ReferenceKernelTable& table) { (void)table; }

}  // namespace orchid
