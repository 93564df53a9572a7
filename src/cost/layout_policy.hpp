// The one rule for which activations the CPU executor stores channels-last (NHWC).
//
// oneDNN's fast convolutions on AVX-512 run on channels-last activations; a tensor stored
// plain (NCHW) costs a reorder on each side of such a convolution. A tensor stays
// channels-last when a convolution that runs channels-last writes it, some use reads it
// channels-last (another such convolution as its source, or as a full-size post-op
// operand: a residual), and nothing needs it plain (a reference kernel, pooling, another
// linear op, a graph output). Fused loops read and write any layout in place: a tensor
// they write and such a convolution reads, or such a convolution writes and they read,
// stays in the convolution's layout too.
//
// Everyone who needs the answer asks keep_channels_last() through LayoutUses: the plan
// executor with the uses of its compiled stages, and channels_last_boundaries() with the
// uses a kernel's neighbours in the whole graph will make (for the kernel timer, which
// times a kernel as it runs inside the model, and for the kernel signature, which must
// tell those measurements apart).
#pragma once

#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "fission/kernel_view.hpp"

namespace orchid {

enum class LayoutUse {
  ChannelsLastWrite,    // the result of a convolution run channels-last (after its epilogue)
  ChannelsLastSource,   // read as the source of a convolution run channels-last
  ChannelsLastOperand,  // a full-size binary post-op operand of such a convolution
  Plain,                // needed plain: anything else, a graph output, weights
  LoopWrite,            // written by a fused loop (in whatever layout is chosen)
  LoopRead,             // read by a fused loop (in whatever layout is chosen)
};

// Written (by such a convolution or a fused loop), read (by such a convolution or a
// fused loop), used by at least one such convolution, and never needed plain.
bool keep_channels_last(std::span<const LayoutUse> uses);

// The uses of many tensors, then the decision for each.
class LayoutUses {
 public:
  void add(const std::string& tensor, LayoutUse use) { uses_[tensor].push_back(use); }
  // The tensors keep_channels_last() keeps.
  std::set<std::string> channels_last() const;

 private:
  std::map<std::string, std::vector<LayoutUse>> uses_;
};

// The boundary tensors of `kernel` that stay channels-last when it runs inside its graph,
// judged from its neighbours: the kernel's own convolutions are assumed to write its
// outputs channels-last (the executor checks that when it runs the kernel), a neighbour
// Conv reading a tensor as its source or a residual Add reading it reads it channels-last,
// and an input is written channels-last when a Conv produces it through an elementwise
// epilogue. Only 4-D f32 activations qualify.
std::set<std::string> channels_last_boundaries(const KernelView& kernel);

}  // namespace orchid
