// Reference kernels of the layout op family.
#include "runtime/reference/reference_kernels.hpp"

namespace orchid {

void register_layout_kernels(ReferenceKernelTable& table) { (void)table; }

}  // namespace orchid
