// Conversion between onnx::TensorProto (including external data) and orchid::Tensor.
#pragma once

#include <string>

#include "ir/tensor.hpp"

namespace onnx {
class TensorProto;
}

namespace orchid {

// `base_dir` resolves external-data locations; `context` prefixes error messages
// (usually the file and tensor name).
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir,
                         const std::string& context);
void tensor_to_proto(const Tensor& tensor, onnx::TensorProto& proto);

// Reads a serialized TensorProto file (ONNX backend test data: input_0.pb ...).
Tensor read_tensor_pb(const std::string& path);

}  // namespace orchid
