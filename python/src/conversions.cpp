// Arguments and arrays between Python and the core.
#include <cstring>

#include "bindings.hpp"

#include "util/checked_math.hpp"
#include "util/error.hpp"

namespace orchid::python {

ImportOptions import_options(const std::map<std::string, std::int64_t>& dims,
                             const std::map<std::string, std::vector<std::int64_t>>& shapes) {
  ImportOptions options;
  for (const auto& [name, value] : dims) {
    if (value < 0) fail("dims: '{}' = {} is negative", name, value);
    options.dim_params[name] = value;
  }
  for (const auto& [name, shape] : shapes) {
    for (std::int64_t d : shape) {
      if (d < 0) fail("shapes: '{}' has a negative dimension {}", name, d);
    }
    checked_numel(shape, "shapes: '" + name + "'");
    options.input_shapes[name] = shape;
  }
  return options;
}

ConfigRoots config_roots(const std::vector<std::string>& dirs) {
  return ConfigRoots(std::vector<std::filesystem::path>(dirs.begin(), dirs.end()));
}

namespace {

struct DTypePair {
  DType dtype;
  const char* numpy;
};
constexpr DTypePair kDTypes[] = {
    {DType::F32, "float32"}, {DType::F16, "float16"}, {DType::F64, "float64"},
    {DType::I64, "int64"},   {DType::I32, "int32"},   {DType::I8, "int8"},
    {DType::U8, "uint8"},    {DType::Bool, "bool"},
};

}  // namespace

std::string numpy_dtype_name(DType dtype) {
  for (const auto& p : kDTypes) {
    if (p.dtype == dtype) return p.numpy;
  }
  internal_error("numpy_dtype_name: no numpy name for {}", dtype_name(dtype));
}

Tensor tensor_from_array(const py::array& array, const std::string& what) {
  const py::dtype given = array.dtype();
  for (const auto& p : kDTypes) {
    if (!given.is(py::dtype(p.numpy)) && !given.equal(py::dtype(p.numpy))) continue;
    // C order and native byte order, copied once into the tensor.
    const auto contiguous = py::array::ensure(array, py::array::c_style);
    if (!contiguous) fail("{}: the array cannot be made C-contiguous", what);
    Shape shape(contiguous.shape(), contiguous.shape() + contiguous.ndim());
    Tensor t(p.dtype, shape);
    if (t.nbytes() != static_cast<std::size_t>(contiguous.nbytes())) {
      internal_error("{}: {} bytes from numpy for a tensor of {} bytes", what, contiguous.nbytes(),
                     t.nbytes());
    }
    if (t.nbytes() > 0) std::memcpy(t.raw(), contiguous.data(), t.nbytes());
    return t;
  }
  fail("{}: numpy dtype {} is not one orchid reads (float32, float16, float64, int64, int32, "
       "int8, uint8, bool)",
       what, py::str(given).cast<std::string>());
}

py::array array_from_tensor(const Tensor& t) {
  py::array out(py::dtype(numpy_dtype_name(t.dtype())),
                std::vector<py::ssize_t>(t.shape().begin(), t.shape().end()));
  if (t.nbytes() > 0) std::memcpy(out.mutable_data(), t.raw(), t.nbytes());
  return out;
}

}  // namespace orchid::python
