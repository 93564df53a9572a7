// Reads an .onnx file (through libonnx's generated protobuf classes) into the graph IR.
// The result follows opset-17 semantics (older op forms are rewritten), has typed graph
// inputs and constants (initializers and Constant nodes), but no shape inference yet.
#pragma once

#include <map>
#include <string>

#include "ir/graph.hpp"

namespace orchid {

struct ImportOptions {
  // Overrides for graph input shapes, by input name.
  std::map<std::string, Shape> input_shapes;
  // Values for symbolic dimensions (dim_param), by name; others become default_dim.
  std::map<std::string, std::int64_t> dim_params;
  std::int64_t default_dim = 1;
};

// Errors (orchid::Error / UnsupportedError) name the file and the node or tensor at fault.
Graph read_onnx(const std::string& path, const ImportOptions& options = {});

}  // namespace orchid
