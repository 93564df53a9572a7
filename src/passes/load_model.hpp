// The front door: read an .onnx file and make it a valid, fully static graph, with
// per-channel affine ops folded into the linear ops before them (passes/affine_folding).
#pragma once

#include <string>

#include "ir/graph.hpp"
#include "onnx/onnx_reader.hpp"
#include "passes/affine_folding.hpp"
#include "passes/static_graph.hpp"

namespace orchid {

struct LoadedModel {
  Graph graph;
  StaticGraphStats stats;
  AffineFoldingStats affine;  // per-channel affine ops folded into linear weights
};

LoadedModel load_model(const std::string& path, const ImportOptions& options = {});

}  // namespace orchid
