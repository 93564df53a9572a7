// Shape functions of the constant op family.
#include "ir/ops/op_families.hpp"

namespace orchid {

void register_constant_ops(OpSchemaTable& table) { (void)table; }

}  // namespace orchid
