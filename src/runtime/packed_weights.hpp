// Constant weights reordered once into the layout a oneDNN linear primitive prefers.
//
// Executors built for one graph can share a packing (plan selection builds one executor
// per candidate plan, each of which would otherwise pack every weight again): a weight is
// packed once per layout, and the copy lives while a primitive uses it.
//
// A weight that an executor reads only packed need not stay in the graph as well: the
// executor reports each such weight as soon as it is packed (PlanExecutorOptions::
// release_weight), and its owner may drop the original (Graph::release_constant).
#pragma once

#include <memory>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "ir/tensor.hpp"

namespace orchid {

class PackedWeights {
 public:
  // `value` (stored plain as `plain`) in `layout`: packed now, or the copy packed earlier
  // for another primitive and still in use.
  std::shared_ptr<const dnnl::memory> get(const dnnl::engine& engine, dnnl::stream& stream,
                                          const Tensor& value, const dnnl::memory::desc& plain,
                                          const dnnl::memory::desc& layout);

 private:
  struct Entry {
    const Tensor* value;
    dnnl::memory::desc layout;
    std::weak_ptr<const dnnl::memory> copy;
  };
  std::vector<Entry> entries_;
};

}  // namespace orchid
