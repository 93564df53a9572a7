// The message of the orchid::Error a call throws ("" when it throws none): tests check
// that errors name the file, node or key at fault.
#pragma once

#include <functional>
#include <string>

#include "util/error.hpp"

namespace orchid::testing {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace orchid::testing
