#include "onnx/tensor_proto.hpp"

#include <bit>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/ranges.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/onnx_pb.h>

#include "onnx/proto_io.hpp"
#include "util/error.hpp"
#include "util/memory_budget.hpp"
#include "util/safe_file.hpp"

namespace orchid {

// raw_data is little-endian by definition; orchid's tensors are native-endian.
static_assert(std::endian::native == std::endian::little, "orchid assumes a little-endian host");

namespace fs = std::filesystem;
using onnx::TensorProto;

std::optional<DType> dtype_from_onnx(std::int32_t onnx_type) {
  switch (onnx_type) {
    case TensorProto::FLOAT:
      return DType::F32;
    case TensorProto::FLOAT16:
      return DType::F16;
    case TensorProto::DOUBLE:
      return DType::F64;
    case TensorProto::INT64:
      return DType::I64;
    case TensorProto::INT32:
      return DType::I32;
    case TensorProto::INT8:
      return DType::I8;
    case TensorProto::UINT8:
      return DType::U8;
    case TensorProto::BOOL:
      return DType::Bool;
    case TensorProto::BFLOAT16:
      return DType::BF16;
    default:
      return std::nullopt;
  }
}

std::int32_t dtype_to_onnx(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return TensorProto::FLOAT;
    case DType::F16:
      return TensorProto::FLOAT16;
    case DType::F64:
      return TensorProto::DOUBLE;
    case DType::I64:
      return TensorProto::INT64;
    case DType::I32:
      return TensorProto::INT32;
    case DType::I8:
      return TensorProto::INT8;
    case DType::U8:
      return TensorProto::UINT8;
    case DType::Bool:
      return TensorProto::BOOL;
    case DType::BF16:
      return TensorProto::BFLOAT16;
  }
  return TensorProto::UNDEFINED;
}

std::string onnx_dtype_name(std::int32_t onnx_type) {
  if (TensorProto::DataType_IsValid(onnx_type)) {
    return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(onnx_type));
  }
  // Types newer than Debian's onnx.proto (ONNX 1.12) knows, from onnx 1.23's.
  static const char* const kNewer[] = {
      "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",      "INT4",
      "FLOAT4E2M1",   "FLOAT8E8M0",     "UINT2",      "INT2",           "FLOAT6E2M3", "FLOAT6E3M2"};
  constexpr std::int32_t kFirstNewer = 17;
  const std::int32_t index = onnx_type - kFirstNewer;
  if (index >= 0 && index < static_cast<std::int32_t>(std::size(kNewer))) return kNewer[index];
  return "type " + std::to_string(onnx_type);
}

bool has_external_data(const TensorProto& proto) {
  return proto.has_data_location() && proto.data_location() == TensorProto::EXTERNAL;
}

namespace {

// External tensors of this size and more are mapped rather than read (tensor_from_proto);
// smaller ones would each take a mapping (the system allows some 65,000) for little.
constexpr std::int64_t kMappedBytes = std::int64_t{1} << 20;

struct ExternalRef {
  std::string location;
  std::int64_t offset = 0;
  std::int64_t length = -1;  // -1: the tensor's byte size
};

std::int64_t parse_size(const std::string& value, const std::string& key,
                        const std::string& context) {
  std::size_t used = 0;
  long long v = -1;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || v < 0) {
    fail("{}: external data {} '{}' is not a non-negative integer", context, key, value);
  }
  return v;
}

ExternalRef external_ref(const TensorProto& proto, const std::string& context) {
  ExternalRef ref;
  for (const auto& entry : proto.external_data()) {
    if (entry.key() == "location") {
      ref.location = entry.value();
    } else if (entry.key() == "offset") {
      ref.offset = parse_size(entry.value(), "offset", context);
    } else if (entry.key() == "length") {
      ref.length = parse_size(entry.value(), "length", context);
    }
  }
  if (ref.location.empty()) fail("{}: external data has no 'location'", context);
  return ref;
}

// Typed-field storage: each dtype has exactly one field that can carry it; int32_data
// carries int32, int8, uint8, bool and the bits of float16.
const char* typed_field_name(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "float_data";
    case DType::F64:
      return "double_data";
    case DType::I64:
      return "int64_data";
    default:
      return "int32_data";
  }
}

std::int64_t typed_field_size(const TensorProto& proto, DType dtype) {
  switch (dtype) {
    case DType::F32:
      return proto.float_data_size();
    case DType::F64:
      return proto.double_data_size();
    case DType::I64:
      return proto.int64_data_size();
    default:
      return proto.int32_data_size();
  }
}

void copy_typed_fields(const TensorProto& proto, Tensor& out) {
  switch (out.dtype()) {
    case DType::F32:
      std::copy(proto.float_data().begin(), proto.float_data().end(), out.data<float>());
      return;
    case DType::F64:
      std::copy(proto.double_data().begin(), proto.double_data().end(), out.data<double>());
      return;
    case DType::I64:
      std::copy(proto.int64_data().begin(), proto.int64_data().end(), out.data<std::int64_t>());
      return;
    default:
      break;
  }
  const auto& src = proto.int32_data();
  for (int i = 0; i < src.size(); ++i) {
    const std::int32_t v = src[i];
    switch (out.dtype()) {
      case DType::I32:
        out.data<std::int32_t>()[i] = v;
        break;
      case DType::I8:
        out.data<std::int8_t>()[i] = static_cast<std::int8_t>(v);
        break;
      case DType::U8:
        out.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(v);
        break;
      case DType::Bool:
        out.data<bool>()[i] = v != 0;
        break;
      case DType::F16:
        out.data<std::uint16_t>()[i] = static_cast<std::uint16_t>(v);
        break;
      case DType::BF16: {  // the bits, like float16 (no C++ type of its own)
        const auto bits = static_cast<std::uint16_t>(v);
        std::memcpy(out.raw() + static_cast<std::size_t>(i) * 2, &bits, 2);
        break;
      }
      default:
        break;
    }
  }
}

// Fails unless the side file holds `want` bytes at the reference's offset; checked before
// allocating so a corrupt length cannot trigger a huge allocation.
std::string check_external(const TensorProto& proto, std::int64_t want, const std::string& base_dir,
                           const std::string& context) {
  const ExternalRef ref = external_ref(proto, context);
  const std::string file = external_data_path(proto, base_dir, context);
  if (ref.length >= 0 && ref.length != want) {
    fail("{}: external data length {} does not match the tensor's {} bytes (file '{}')", context,
         ref.length, want, file);
  }
  const std::int64_t size = regular_file_size(file);
  if (size < 0) {
    fail("{}: external data file '{}' does not exist or is not a regular file", context, file);
  }
  if (size < ref.offset || size - ref.offset < want) {
    fail("{}: external data file '{}' is too short (need {} bytes at offset {})", context, file,
         want, ref.offset);
  }
  return file;
}

}  // namespace

std::string external_data_path(const TensorProto& proto, const std::string& base_dir,
                               const std::string& context) {
  const ExternalRef ref = external_ref(proto, context);
  const fs::path location(ref.location);
  if (location.is_absolute() || location.has_root_name() || location.has_root_directory()) {
    fail(
        "{}: external data location '{}' is absolute; only paths relative to the model "
        "folder are allowed",
        context, ref.location);
  }
  for (const auto& part : location.lexically_normal()) {
    if (part == "..") {
      fail("{}: external data location '{}' leaves the model folder", context, ref.location);
    }
  }
  // Symlinks (the file, a folder on the way, relative links) must resolve inside too.
  return confined_path(base_dir, ref.location, context + ": external data");
}

Tensor tensor_from_proto(const TensorProto& proto, const std::string& base_dir,
                         const std::string& context) {
  if (proto.data_type() == TensorProto::UNDEFINED) fail("{}: tensor has no data_type", context);
  const auto dtype = dtype_from_onnx(proto.data_type());
  if (!dtype) unsupported("{}: unsupported dtype {}", context, onnx_dtype_name(proto.data_type()));
  if (proto.has_segment()) unsupported("{}: segmented tensors are not supported", context);
  const Shape dims(proto.dims().begin(), proto.dims().end());
  const std::int64_t numel = checked_numel(dims, context);
  const std::int64_t nbytes = checked_nbytes(dims, dtype_size(*dtype), context);
  check_memory_budget(nbytes, context);

  // Validate the source size first, then allocate.
  if (has_external_data(proto)) {
    const std::string file = check_external(proto, nbytes, base_dir, context);
    const std::int64_t offset = external_ref(proto, context).offset;
    // Large ones mapped, as ONNX Runtime does: the rows of an embedding table that no
    // input looks up are never loaded (DeBERTa-v2's 750 MiB one), and a weight the
    // executor holds only packed goes back to the system when the graph drops it. At an
    // offset aligned for any element type, as exporters write them.
    if (nbytes >= kMappedBytes && offset % 64 == 0) {
      if (auto mapped = map_file_range(file, offset, nbytes, context)) {
        return Tensor::borrowed(*dtype, dims, mapped->data, std::move(mapped->owner));
      }
    }
    Tensor out(*dtype, dims);
    read_file_range(file, offset, nbytes, out.raw(), context);
    return out;
  }
  if (proto.has_raw_data()) {
    if (static_cast<std::int64_t>(proto.raw_data().size()) != nbytes) {
      fail("{}: raw_data has {} bytes but {} [{}] needs {}", context, proto.raw_data().size(),
           dtype_name(*dtype), fmt::join(proto.dims(), ","), nbytes);
    }
    Tensor out(*dtype, Shape(proto.dims().begin(), proto.dims().end()));
    if (nbytes > 0) std::memcpy(out.raw(), proto.raw_data().data(), out.nbytes());
    return out;
  }
  const std::int64_t stored = typed_field_size(proto, *dtype);
  if (stored != numel) {
    fail("{}: {} holds {} values but the dims need {}", context, typed_field_name(*dtype), stored,
         numel);
  }
  Tensor out(*dtype, Shape(proto.dims().begin(), proto.dims().end()));
  copy_typed_fields(proto, out);
  return out;
}

void tensor_to_proto(const Tensor& tensor, TensorProto& proto) {
  proto.clear_dims();
  for (auto d : tensor.shape()) proto.add_dims(d);
  proto.set_data_type(dtype_to_onnx(tensor.dtype()));
  proto.clear_float_data();
  proto.clear_int32_data();
  proto.clear_int64_data();
  proto.clear_double_data();
  proto.clear_external_data();
  proto.clear_data_location();
  proto.set_raw_data(reinterpret_cast<const char*>(tensor.raw()), tensor.nbytes());
}

Tensor read_tensor_pb(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) fail("tensor file '{}' does not exist", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("tensor file '{}' cannot be opened", path);
  google::protobuf::io::IstreamInputStream raw(&in);
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT_MAX);
  TensorProto proto;
  if (!proto.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    fail("'{}' is not a valid serialized TensorProto", path);
  }
  const std::string name = proto.name().empty() ? "<unnamed>" : proto.name();
  // Built in one expression: assigning "." afterwards trips a GCC 12 -Wrestrict false positive.
  const fs::path parent = fs::path(path).parent_path();
  const std::string folder = parent.empty() ? std::string(".") : parent.string();
  return tensor_from_proto(proto, folder, fmt::format("tensor file '{}': tensor '{}'", path, name));
}

void release_tensor_data(TensorProto& proto) {
  // clear() keeps a string's or repeated field's capacity; swapping with an empty one frees it.
  if (proto.has_raw_data()) std::string().swap(*proto.mutable_raw_data());
  google::protobuf::RepeatedField<float>().Swap(proto.mutable_float_data());
  google::protobuf::RepeatedField<double>().Swap(proto.mutable_double_data());
  google::protobuf::RepeatedField<std::int32_t>().Swap(proto.mutable_int32_data());
  google::protobuf::RepeatedField<std::int64_t>().Swap(proto.mutable_int64_data());
  google::protobuf::RepeatedField<std::uint64_t>().Swap(proto.mutable_uint64_data());
  google::protobuf::RepeatedPtrField<std::string>().Swap(proto.mutable_string_data());
}

}  // namespace orchid
