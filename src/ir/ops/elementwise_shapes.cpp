// Shape functions of the elementwise op family.
#include "ir/ops/op_families.hpp"

namespace orchid {

void register_elementwise_ops(OpSchemaTable& table) { (void)table; }

}  // namespace orchid
