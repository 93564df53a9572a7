// The first thing the importer does with a parsed model: add up what its constants
// declare (initializers, Constant values, in branches too) and refuse a model whose
// tensors overflow or exceed the memory budget, before any of them is allocated or read.
#pragma once

#include <string>

namespace onnx {
class ModelProto;
}

namespace orchid {

// Errors name the file, the tensor and its size.
void check_declared_sizes(const onnx::ModelProto& model, const std::string& path);

}  // namespace orchid
