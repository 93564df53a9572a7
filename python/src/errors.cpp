// orchid::Error (bad input, the CLI's "orchid: error: ...") becomes orchid.Error with the
// same message; UnsupportedError a subclass of it; InternalError (a bug in orchid) its
// own class, deliberately not an orchid.Error.
#include "bindings.hpp"

#include "util/error.hpp"

namespace orchid::python {

void bind_errors(py::module_& m) {
  static py::exception<Error> error(m, "Error", PyExc_Exception);
  static py::exception<UnsupportedError> unsupported(m, "UnsupportedError", error.ptr());
  static py::exception<InternalError> internal(m, "InternalError", PyExc_Exception);
  // Translators run newest first: the subclass before its base.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const UnsupportedError& e) {
      PyErr_SetString(unsupported.ptr(), e.what());
    } catch (const Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    } catch (const InternalError& e) {
      PyErr_SetString(internal.ptr(), e.what());
    }
  });
}

}  // namespace orchid::python
