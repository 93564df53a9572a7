// Constant weights reordered once into the layout a oneDNN linear primitive prefers.
//
// Executors built for one graph can share a packing (plan selection builds one executor
// per candidate plan, each of which would otherwise pack every weight again): a weight is
// packed once per layout, and the copy lives while a primitive uses it.
//
// A weight that an executor reads only packed need not stay in the graph as well: the
// executor reports each such weight as soon as it is packed (PlanExecutorOptions::
// release_weight), and its owner may drop the original (Graph::release_constant).
//
// A packing that holds a graph's weights (hold_weights_of) does that itself, for every
// executor built on that graph while it lives (the default command's in-context rounds,
// plan selection and run: BERT-base held its 326 MiB of MatMul weights twice, plain and
// packed): an original is dropped once it is packed and no live executor reads it plain,
// the packed copy is kept, and an executor that reads the weight plain later gets a plain
// copy rebuilt from the packed one (restore). Such a packing must outlive its executors.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "ir/graph.hpp"
#include "ir/tensor.hpp"

namespace orchid {

class PackedWeights {
 public:
  // Weight `name`, whose value is `value` (stored plain as `plain`), in `layout`: packed
  // now, or the copy packed earlier for another primitive and still in use. A released
  // original is packed from a copy held in another layout.
  std::shared_ptr<const dnnl::memory> get(const dnnl::engine& engine, dnnl::stream& stream,
                                          const std::string& name, const Tensor& value,
                                          const dnnl::memory::desc& plain,
                                          const dnnl::memory::desc& layout);

  // Holds the weights of `graph`, at its current address (call again after it moved);
  // nullptr: none. Its released weights must have been restored before it changes.
  void hold_weights_of(Graph* graph) { graph_ = graph; }
  bool holds_weights_of(const Graph& graph) const { return graph_ == &graph; }

  // For the graph held: whether `name`'s original was dropped here.
  bool released(const std::string& name) const { return held_.count(name) > 0; }
  // Drops `name`'s original (packed, read only packed by the caller) unless a live
  // executor reads it plain; true when it is released (now or before).
  bool release(const std::string& name);
  // Puts a plain copy of released `name` back into the graph, rebuilt from its packed copy.
  void restore(const dnnl::engine& engine, dnnl::stream& stream, const std::string& name);
  // An executor reading `name` plain (its original must stay) from now until remove.
  void add_plain_reader(const std::string& name) { ++plain_readers_[name]; }
  void remove_plain_reader(const std::string& name);

 private:
  struct Entry {
    std::string name;
    const Tensor* value;
    dnnl::memory::desc plain, layout;
    std::weak_ptr<const dnnl::memory> copy;
  };
  std::vector<Entry> entries_;
  Graph* graph_ = nullptr;
  // Per released weight: the packed copy that stands for its original, and the plain
  // layout of the original's bytes.
  struct Held {
    std::shared_ptr<const dnnl::memory> copy;
    dnnl::memory::desc plain;
  };
  std::map<std::string, Held> held_;
  std::map<std::string, int> plain_readers_;
};

}  // namespace orchid
