// Arguments and arrays between Python and the core.
#include <cstring>

#include <pybind11/stl.h>

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

// Through numpy's Python API and the buffer protocol only (not pybind11/numpy.h, whose
// Debian version predates numpy 2's descriptor layout), so numpy 1 and 2 both work.
Tensor tensor_from_array(const py::handle& value, const std::string& what) {
  const py::module_ numpy = py::module_::import("numpy");
  const py::object array = numpy.attr("ascontiguousarray")(value);
  const py::object dtype = array.attr("dtype");
  const std::string name = py::str(dtype.attr("name"));
  const std::string byteorder = py::str(dtype.attr("byteorder"));
  for (const auto& p : kDTypes) {
    if (name != p.numpy) continue;
    if (byteorder == ">")
      fail("{}: the array is big-endian {}; orchid reads native byte order", what, name);
    const py::buffer_info buffer = py::buffer(array).request();
    Shape shape(buffer.shape.begin(), buffer.shape.end());
    Tensor t(p.dtype, shape);
    if (t.nbytes() != static_cast<std::size_t>(buffer.size * buffer.itemsize)) {
      internal_error("{}: {} bytes from numpy for a tensor of {} bytes", what,
                     buffer.size * buffer.itemsize, t.nbytes());
    }
    if (t.nbytes() > 0) std::memcpy(t.raw(), buffer.ptr, t.nbytes());
    return t;
  }
  fail(
      "{}: numpy dtype {} is not one orchid reads (float32, float16, float64, int64, int32, "
      "int8, uint8, bool)",
      what, name);
}

py::object array_from_tensor(const Tensor& t) {
  const py::module_ numpy = py::module_::import("numpy");
  const py::object out =
      numpy.attr("empty")(py::tuple(py::cast(t.shape())), numpy_dtype_name(t.dtype()));
  const py::buffer_info buffer = py::buffer(out).request(true);
  if (static_cast<std::size_t>(buffer.size * buffer.itemsize) != t.nbytes()) {
    internal_error("array_from_tensor: numpy allocated {} bytes for {} bytes",
                   buffer.size * buffer.itemsize, t.nbytes());
  }
  if (t.nbytes() > 0) std::memcpy(buffer.ptr, t.raw(), t.nbytes());
  return out;
}

}  // namespace orchid::python
