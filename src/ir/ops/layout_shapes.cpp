// Shape functions of the layout op family.
#include "ir/ops/op_families.hpp"

namespace orchid {

void register_layout_ops(OpSchemaTable& table) { (void)table; }

}  // namespace orchid
