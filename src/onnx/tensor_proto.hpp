// Conversion between onnx::TensorProto (including external data) and orchid::Tensor.
#pragma once

#include <cstdint>
#include <optional>
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
// Fills dims, data_type and little-endian raw_data (the name is left alone).
void tensor_to_proto(const Tensor& tensor, onnx::TensorProto& proto);

// Frees the proto's value storage (raw_data and the typed fields) once tensor_from_proto
// has copied it, so a model's weights are not held twice while it is imported.
void release_tensor_data(onnx::TensorProto& proto);

// Reads a serialized TensorProto file (ONNX backend test data: input_0.pb ...).
Tensor read_tensor_pb(const std::string& path);

// ONNX TensorProto::DataType <-> DType; nullopt for types orchid does not support.
std::optional<DType> dtype_from_onnx(std::int32_t onnx_type);
std::int32_t dtype_to_onnx(DType dtype);
std::string onnx_dtype_name(std::int32_t onnx_type);

// True when the tensor's data lives in a side file (data_location = EXTERNAL).
bool has_external_data(const onnx::TensorProto& proto);
// The side file of an external tensor, resolved against base_dir. Absolute locations and
// locations escaping base_dir ("..") are errors prefixed with `context`.
std::string external_data_path(const onnx::TensorProto& proto, const std::string& base_dir,
                               const std::string& context);

}  // namespace orchid
