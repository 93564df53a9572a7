// Reference kernels of the pooling op family.
#include "runtime/reference/reference_kernels.hpp"

namespace orchid {

void register_pooling_kernels(ReferenceKernelTable& table) { (void)table; }

}  // namespace orchid
