#include "bindings.hpp"
#include "profile/cpu_environment.hpp"

PYBIND11_MODULE(_orchid, m) {
  m.doc() = "orchid's C++ core (use the orchid package, not this module)";
  m.attr("__version__") = ORCHID_VERSION;
  // OpenBLAS (loaded with CBC) would keep threads spinning on the executor's cores.
  orchid::keep_blas_single_threaded();
  orchid::python::bind_errors(m);
  orchid::python::bind_session(m);
  orchid::python::bind_orchestrate(m);
  orchid::python::bind_mapping(m);
}
