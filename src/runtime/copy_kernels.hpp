// Concat and Split as block copies: each input (output) is a run of whole rows of the
// other side's tensor, so the executor moves them with memcpy instead of the reference
// kernels' per-element index arithmetic (YOLOX-nano's Focus concat took 40 % of its run).
// Same signature as a reference kernel; plain row-major tensors of any dtype.
#pragma once

#include <span>
#include <vector>

#include "eval/reference/reference_kernels.hpp"

namespace orchid {

// The block-copy kernel for `op_type`, or nullptr when it has none.
ReferenceKernel find_copy_kernel(const std::string& op_type);

}  // namespace orchid
