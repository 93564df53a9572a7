// Extraction of the mapper's layer DAG from an imported ONNX graph.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.hpp"
#include "mapping/workload.hpp"

namespace orchid::mapping {

// Heavy ops (Conv, Gemm/MatMul, LSTM) become layers; pooling, elementwise and norm ops
// become cheap layers or fold into their single producer; layout ops (reshape,
// transpose, ...) are folded into edges. The graph must have static shapes.
Workload extract_workload(const Graph& graph, std::int64_t batch, const std::string& name);

}  // namespace orchid::mapping
