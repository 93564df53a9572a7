#include "ir/npy.hpp"

#include <cstring>
#include <fstream>
#include <sstream>

#include "util/atomic_file.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

const char kMagic[] = "\x93NUMPY";

const char* descr_of(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "<f4";
    case DType::F16:
      return "<f2";
    case DType::F64:
      return "<f8";
    case DType::I64:
      return "<i8";
    case DType::I32:
      return "<i4";
    case DType::I8:
      return "|i1";
    case DType::U8:
      return "|u1";
    case DType::Bool:
      return "|b1";
  }
  return "";
}

DType dtype_of_descr(const std::string& descr, const std::string& path) {
  for (DType d : {DType::F32, DType::F16, DType::F64, DType::I64, DType::I32, DType::I8, DType::U8,
                  DType::Bool}) {
    const std::string ours = descr_of(d);
    if (descr == ours) return d;
    // numpy writes single-byte types with '|' but accepts '<' and '='
    if (descr.size() == 3 && ours.size() == 3 && descr.substr(1) == ours.substr(1) &&
        (descr[0] == '<' || descr[0] == '|' || descr[0] == '=')) {
      return d;
    }
  }
  unsupported(
      "'{}': unsupported .npy dtype '{}' (supported: f4 f2 f8 i8 i4 i1 u1 b1, "
      "little-endian)",
      path, descr);
}

// Extracts the value text of `key` from the header dict, e.g. 'descr': '<f4'.
std::string header_value(const std::string& header, const std::string& key,
                         const std::string& path) {
  const std::string quoted = "'" + key + "'";
  auto pos = header.find(quoted);
  if (pos == std::string::npos) fail("'{}': .npy header has no '{}' entry", path, key);
  pos = header.find(':', pos);
  if (pos == std::string::npos) fail("'{}': malformed .npy header", path);
  ++pos;
  while (pos < header.size() && header[pos] == ' ') ++pos;
  if (pos >= header.size()) fail("'{}': malformed .npy header", path);
  if (header[pos] == '\'') {
    auto end = header.find('\'', pos + 1);
    if (end == std::string::npos) fail("'{}': malformed .npy header", path);
    return header.substr(pos + 1, end - pos - 1);
  }
  if (header[pos] == '(') {
    auto end = header.find(')', pos);
    if (end == std::string::npos) fail("'{}': malformed .npy header", path);
    return header.substr(pos + 1, end - pos - 1);
  }
  auto end = header.find_first_of(",}", pos);
  return header.substr(pos, end - pos);
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open '{}'", path);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (content.size() < 10 || content.compare(0, 6, kMagic, 6) != 0) {
    fail("'{}' is not a .npy file (bad magic)", path);
  }
  const int major = static_cast<unsigned char>(content[6]);
  std::size_t header_len = 0;
  std::size_t offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(content[8]) |
                 (static_cast<std::size_t>(static_cast<unsigned char>(content[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (content.size() < 12) fail("'{}': truncated .npy header", path);
    for (int i = 0; i < 4; ++i) {
      header_len |= static_cast<std::size_t>(static_cast<unsigned char>(content[8 + i])) << (8 * i);
    }
    offset = 12;
  } else {
    fail("'{}': unsupported .npy format version {}", path, major);
  }
  if (offset + header_len > content.size()) fail("'{}': truncated .npy header", path);
  const std::string header = content.substr(offset, header_len);
  const DType dtype = dtype_of_descr(header_value(header, "descr", path), path);
  const std::string fortran = header_value(header, "fortran_order", path);
  if (fortran.find("True") != std::string::npos) {
    unsupported("'{}': Fortran-order .npy arrays are not supported", path);
  }
  Shape shape;
  std::stringstream dims(header_value(header, "shape", path));
  std::string item;
  while (std::getline(dims, item, ',')) {
    const auto first = item.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    try {
      shape.push_back(std::stoll(item.substr(first)));
    } catch (const std::exception&) {
      fail("'{}': bad dimension '{}' in .npy shape", path, item);
    }
    if (shape.back() < 0) fail("'{}': negative dimension in .npy shape", path);
  }
  Tensor tensor(dtype, shape);
  const std::size_t data_offset = offset + header_len;
  if (content.size() - data_offset < tensor.nbytes()) {
    fail("'{}': data is truncated ({} bytes, {} expected for {} {})", path,
         content.size() - data_offset, tensor.nbytes(), dtype_name(dtype), shape_to_string(shape));
  }
  std::memcpy(tensor.raw(), content.data() + data_offset, tensor.nbytes());
  return tensor;
}

void write_npy(const std::string& path, const Tensor& tensor) {
  std::string shape = "(";
  for (std::size_t i = 0; i < tensor.shape().size(); ++i) {
    shape += std::to_string(tensor.shape()[i]);
    shape += (tensor.shape().size() == 1 || i + 1 < tensor.shape().size()) ? "," : "";
    if (i + 1 < tensor.shape().size()) shape += " ";
  }
  shape += ")";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   descr_of(tensor.dtype()), shape);
  // Pad so the data starts on a 64-byte boundary, header ends with '\n'.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  out.append(reinterpret_cast<const char*>(tensor.raw()), tensor.nbytes());
  write_file_atomically(path, out);
}

}  // namespace orchid
