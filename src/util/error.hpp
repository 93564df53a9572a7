// orchid::Error is the one exception type the library throws for bad input or
// unsupported features. Its message is meant for the user: it names the file, node,
// tensor or key at fault and what is wrong with it. orchid::InternalError is a broken
// invariant inside orchid (a bug, whatever the input): it is not an Error, so no caller
// that handles bad input swallows it, and the CLI reports it with another prefix and
// exit code.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace orchid {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Raised when the input is well formed but uses an op, attribute value or dtype that
// orchid does not implement. Kept distinct so tests can tell "refused" from "broken".
class UnsupportedError : public Error {
 public:
  explicit UnsupportedError(const std::string& message) : Error(message) {}
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void unsupported(fmt::format_string<Args...> format, Args&&... args) {
  throw UnsupportedError(fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void internal_error(fmt::format_string<Args...> format, Args&&... args) {
  throw InternalError(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace orchid
