// Shape functions of the pooling op family.
#include "ir/ops/op_families.hpp"

namespace orchid {

void register_pooling_ops(OpSchemaTable& table) { (void)table; }

}  // namespace orchid
