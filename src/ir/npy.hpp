// NumPy .npy files (format versions 1.0-3.0, little-endian, C order): the field's
// convention for exchanging tensors with Python tools.
#pragma once

#include <string>
#include <string_view>

#include "ir/tensor.hpp"

namespace orchid {

// Errors name the file and what is wrong (bad magic, unsupported dtype, short data...).
// Only regular files are read, at most the memory budget.
Tensor read_npy(const std::string& path);
// The same from bytes in memory; `path` only names them in errors.
Tensor parse_npy(std::string_view content, const std::string& path);
// Written atomically.
void write_npy(const std::string& path, const Tensor& tensor);
// The bytes write_npy writes.
std::string encode_npy(const Tensor& tensor);

}  // namespace orchid
