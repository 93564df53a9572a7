// Reads an .onnx file (through libonnx's generated protobuf classes) into the graph IR.
// The result follows opset-17 semantics (older op forms are rewritten), has typed graph
// inputs and constants (initializers and Constant nodes), but no shape inference yet.
#pragma once

#include <functional>
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
  // Told each symbolic or unknown input dimension that got default_dim (one line each,
  // naming the input, the dimension and the value); unset: silent.
  std::function<void(const std::string&)> warn;
};

// The metadata key under which the reader keeps the shape an input with symbolic or
// unknown dims declares ("batch x 3 x 224 x 224"; "?" for an unnamed unknown dim).
std::string declared_shape_key(const std::string& input);

// Errors (orchid::Error / UnsupportedError) name the file and the node or tensor at fault.
// A dim_params name that no graph input declares, and an input_shapes entry whose rank
// differs from the declared shape, are errors at the input.
Graph read_onnx(const std::string& path, const ImportOptions& options = {});

}  // namespace orchid
