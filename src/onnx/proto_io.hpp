// Loading and atomically saving ModelProto files: the one place that talks to protobuf
// streams, so every reader path gets the same size limit and error messages.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

namespace orchid {

// Parses an .onnx file (up to 2 GB). Missing, unreadable or non-ONNX files are an
// orchid::Error naming the file.
onnx::ModelProto load_model_proto(const std::string& path);

// Serializes to `path.tmp.<pid>` in the same folder, then renames over `path`.
void save_model_proto(const onnx::ModelProto& model, const std::string& path);

// Folder that relative external-data locations of `model_path` resolve against.
std::string model_folder(const std::string& model_path);

}  // namespace orchid
