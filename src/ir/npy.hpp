// NumPy .npy files (format versions 1.0-3.0, little-endian, C order): the field's
// convention for exchanging tensors with Python tools.
#pragma once

#include <string>

#include "ir/tensor.hpp"

namespace orchid {

// Errors name the file and what is wrong (bad magic, unsupported dtype, short data...).
Tensor read_npy(const std::string& path);
// Written atomically.
void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace orchid
