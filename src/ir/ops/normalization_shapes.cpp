// Shape functions of the normalization op family.
#include "ir/ops/op_families.hpp"

namespace orchid {

void register_normalization_ops(OpSchemaTable& table) { (void)table; }

}  // namespace orchid
