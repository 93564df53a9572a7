// The front door: read an .onnx file and make it a valid, fully static graph.
#pragma once

#include <string>

#include "ir/graph.hpp"
#include "onnx/onnx_reader.hpp"
#include "passes/static_graph.hpp"

namespace orchid {

struct LoadedModel {
  Graph graph;
  StaticGraphStats stats;
};

LoadedModel load_model(const std::string& path, const ImportOptions& options = {});

}  // namespace orchid
