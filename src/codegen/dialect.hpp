// The portable kernel dialect: every generated kernel is written once against a small
// prelude of macros (KERNEL, GLOBAL, SHARED, BARRIER(), GROUP_ID, LOCAL_ID, ...) that
// maps it either to CUDA C++ or to OpenCL C. Math is spelled with C99's float names
// (expf, erff, ...), which the OpenCL prelude maps onto OpenCL's overloaded builtins.
#pragma once

#include <string>
#include <string_view>

namespace orchid::codegen {

enum class Target { Cuda, OpenCL };

std::string_view target_name(Target target);
// "cuda" or "opencl"; an orchid::Error for anything else.
Target parse_target(std::string_view name);

// The macros and typedefs every generated source starts with.
std::string prelude(Target target);

}  // namespace orchid::codegen
