// Pieces of the orchid._orchid extension, one file each; module.cpp puts them together.
// The Python side (python/orchid/) gives them their public names and defaults.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include "eval/reference_interpreter.hpp"
#include "onnx/onnx_reader.hpp"
#include "util/config_roots.hpp"

namespace orchid::python {

namespace py = pybind11;

// dims {"batch": 1} and shapes {"input": [1, 3, 224, 224]} as the importer takes them.
ImportOptions import_options(const std::map<std::string, std::int64_t>& dims,
                             const std::map<std::string, std::vector<std::int64_t>>& shapes);
ConfigRoots config_roots(const std::vector<std::string>& dirs);

// numpy <-> Tensor, copying; `what` names the array in errors.
Tensor tensor_from_array(const py::handle& value, const std::string& what);
py::object array_from_tensor(const Tensor& tensor);
// "f32" -> "float32" (numpy's names).
std::string numpy_dtype_name(DType dtype);

void bind_errors(py::module_& m);
void bind_session(py::module_& m);
void bind_orchestrate(py::module_& m);  // and inspect
void bind_mapping(py::module_& m);

}  // namespace orchid::python
