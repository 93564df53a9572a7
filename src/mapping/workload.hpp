// The mapper's view of a network: a DAG of layers with the dimensions the cost models
// need. Built from any imported ONNX graph, or read from a benchmark case file
// (configs/workloads/*.toml, H2H-style modalities with fusion edges).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.hpp"
#include "ir/node.hpp"
#include "ir/tensor.hpp"
#include "mapping/design.hpp"
#include "onnx/onnx_reader.hpp"
#include "util/config_roots.hpp"

namespace orchid::mapping {

// One ONNX node a layer contains besides its linear op (an epilogue: BatchNorm, bias
// add, activation, pooling...), or the head op of a cheap layer, kept so the GPU costing
// can rebuild the layer's subgraph for any batch and shard. Shapes are symbolic:
// kBatchDim stands for the batch, kChannelDim for the linear op's output channels.
inline constexpr std::int64_t kBatchDim = -1;
inline constexpr std::int64_t kChannelDim = -2;
struct LayerNodeInput {
  enum class From : std::uint8_t { Value, Constant, External, Omitted };
  From from = From::External;
  int value = 0;  // Value: index into the layer's values (linear output first, then nodes')
  Shape shape;    // Constant / External, symbolic
  DType dtype = DType::F32;
  std::shared_ptr<const Tensor> data;  // small constants (axes, bounds) keep their values
};
struct LayerNode {
  Node node;  // op type and attributes; input and output names are rebuilt
  std::vector<LayerNodeInput> inputs;
};
struct LayerRecipe {
  std::vector<LayerNode> nodes;
  std::string key;  // canonical text of the nodes, for memoising costs
};

// Dimensions per inference sample; `batch` multiplies them.
//  conv:   M out channels, N in channels, R x C output, K kernel, S stride, P pad
//  fc:     M out features, N in features, K columns (tokens) per sample
//  matmul: G independent products (heads) of (M x N) * (N x K), both operands activations
//  lstm:   hidden, dimen (input size), iter (time steps, x2 when bidirectional), gates
//          (LSTM 4; GRU 3 and RNN 1 use the same engine model with fewer gate blocks)
//  cheap:  elems output elements (pooling, elementwise, normalisation)
struct Layer {
  std::string name;
  LayerKind kind = LayerKind::Cheap;
  int modality = 0;  // H2H naming M<modality>L<index>; used by its activation locality
  int index = 0;
  std::int64_t m = 1, n = 1, r = 1, c = 1, k = 1, s = 1, p = 0, g = 1;
  std::int64_t hidden = 0, dimen = 0, iter = 0;
  std::int64_t gates = 4;  // lstm kind: weight blocks per hidden unit (LSTM 4, GRU 3, RNN 1)
  std::int64_t elems = 0;  // cheap work (for heavy layers: the fused epilogue)
  std::int64_t in_elems = 0, out_elems = 0;  // activations per sample; 0 = from the dims
  std::int64_t batch = 1;
  // Non-batch split applied by sharding (the GPU subgraph of a cheap layer divides its
  // first non-batch dimension by it).
  std::int64_t split = 1;
  bool bias = true;  // the linear op adds a bias (case files: always)
  // Conv: its `group` attribute (depthwise: the channels).
  std::int64_t conv_groups = 1;
  // The ONNX nodes besides the linear op (null for case-file layers: bias + ReLU then).
  std::shared_ptr<const LayerRecipe> recipe;
  std::vector<int> preds;
  std::vector<int> succs;
  // Extraction only: the graph nodes (indices, topological order) this layer computes —
  // its op, the epilogue folded into it and the layout ops that follow it.
  std::vector<std::size_t> nodes;

  double weight_elements() const;  // per copy of the model
  double input_elements() const;   // whole batch
  double output_elements() const;  // whole batch
  double ops() const;              // multiply-adds x 2, whole batch
};

struct Workload {
  std::string name;
  std::int64_t batch = 1;
  std::vector<Layer> layers;  // topologically ordered
  // Extraction only: layout nodes that read no layer (graph inputs and constants alone).
  std::vector<std::size_t> free_nodes;
  // Extraction only: the graph the layers' `nodes` index into (its constants shared).
  std::shared_ptr<const Graph> graph;
  // Sorts the layers topologically (stable: the listed order wins ties, so chains keep
  // their file order, which H2H's frontier order depends on), renumbers preds and fills
  // succs. Fails naming the workload on a bad predecessor or a cycle.
  void link();
};

// Sources: workload_from_graph.hpp (ONNX graphs), case_file.hpp (case files).
// WORKLOAD is an .onnx path, a case file path, or a name looked up as
// workloads/<name>.toml in the config roots, then models/<name>.onnx beside a root.
// `import` (input shapes, symbolic dims) applies to ONNX workloads; a case file with any
// of them set is an error.
Workload load_workload(const std::string& spec, std::int64_t batch, const ConfigRoots& roots,
                       const ImportOptions& import = {});

}  // namespace orchid::mapping
