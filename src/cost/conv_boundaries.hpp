// Which of a kernel's boundary tensors the plan executor keeps channels-last (NHWC)
// when the kernel runs inside a model, judged from the kernel's neighbours in the whole
// primitive graph: a tensor a convolution hands to other convolutions (or to a residual
// Add that becomes a post-op) stays NHWC; one a fused loop or another stage reads is
// stored plain, and the convolution pays a reorder. The kernel timer times a kernel with
// exactly these boundaries NHWC, and the kernel signature includes them, so a measured
// kernel costs what it costs in its context.
#pragma once

#include <set>
#include <string>

#include "fission/kernel_view.hpp"

namespace orchid {

std::set<std::string> conv_neighbour_boundaries(const KernelView& kernel);

}  // namespace orchid
