// Shape functions of the linear op family.
#include "ir/ops/op_families.hpp"

namespace orchid {

void register_linear_ops(OpSchemaTable& table) { (void)table; }

}  // namespace orchid
