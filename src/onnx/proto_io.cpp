#include "onnx/proto_io.hpp"

#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include "util/error.hpp"

namespace orchid {

namespace fs = std::filesystem;

onnx::ModelProto load_model_proto(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail("ONNX file '{}' does not exist", path);
  if (!fs::is_regular_file(path, ec)) fail("ONNX file '{}' is not a regular file", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("ONNX file '{}' cannot be opened", path);

  google::protobuf::io::IstreamInputStream raw(&in);
  google::protobuf::io::CodedInputStream coded(&raw);
  // The default limit (64 MB in older protobuf) is too small for real models.
  coded.SetTotalBytesLimit(INT_MAX);
  onnx::ModelProto model;
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    fail(
        "'{}' is not a valid ONNX model: protobuf parsing failed (truncated or not an "
        "ONNX file)",
        path);
  }
  if (!model.has_graph()) {
    fail("'{}' is not a valid ONNX model: it has no graph (not an ONNX file?)", path);
  }
  return model;
}

void save_model_proto(const onnx::ModelProto& model, const std::string& path) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail("cannot write ONNX file '{}'", tmp);
    if (!model.SerializeToOstream(&out)) {
      out.close();
      std::remove(tmp.c_str());
      fail("cannot serialize ONNX model to '{}' (larger than 2 GB?)", path);
    }
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      fail("writing ONNX file '{}' failed", tmp);
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    fail("cannot rename '{}' to '{}': {}", tmp, path, ec.message());
  }
}

std::string model_folder(const std::string& model_path) {
  const fs::path parent = fs::path(model_path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

}  // namespace orchid
