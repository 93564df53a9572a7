// Writes the graph IR back to an .onnx file (opset 17). Constants become initializers.
// The write is atomic: a temporary file in the same folder, then rename.
#pragma once

#include <string>

#include "ir/graph.hpp"

namespace orchid {

void write_onnx(const Graph& graph, const std::string& path);

}  // namespace orchid
