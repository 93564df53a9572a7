// The front door: read an .onnx file and make it a valid, fully static graph, with
// per-channel affine ops folded into the linear ops before them (passes/affine_folding) and
// 1x1 convolutions of upsampled concatenations moved before the upsampling
// (passes/resize_before_pointwise) and the transposes between token and image form turned
// around (passes/token_transposes).
#pragma once

#include <string>

#include "ir/graph.hpp"
#include "onnx/onnx_reader.hpp"
#include "passes/affine_folding.hpp"
#include "passes/resize_before_pointwise.hpp"
#include "passes/static_graph.hpp"
#include "passes/token_transposes.hpp"

namespace orchid {

struct LoadedModel {
  Graph graph;
  StaticGraphStats stats;
  AffineFoldingStats affine;             // per-channel affine ops folded into linear weights
  ResizeCommuteStats resize_commute;     // 1x1 convolutions moved before upsampling
  TokenTransposeStats token_transposes;  // token <-> image transposes turned around
};

LoadedModel load_model(const std::string& path, const ImportOptions& options = {});

}  // namespace orchid
