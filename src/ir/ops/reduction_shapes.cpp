// Shape functions of the reduction op family.
#include "ir/ops/op_families.hpp"

namespace orchid {

void register_reduction_ops(OpSchemaTable& table) { (void)table; }

}  // namespace orchid
