// A result or the reason there is none, for code that may decline a request as a normal
// outcome (a fused loop that cannot express a run, an epilogue op oneDNN cannot fold):
// a refusal is a value the caller inspects, not an exception. C++20 has no
// std::expected; this is the small part of it orchid needs.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "util/error.hpp"

namespace orchid {

// Why a request was declined, in words for logs and tests.
struct Refusal {
  std::string why;
};

template <typename... Args>
Refusal refusal(fmt::format_string<Args...> format, Args&&... args) {
  return Refusal{fmt::format(format, std::forward<Args>(args)...)};
}

// Either a T or a Refusal.
template <typename T>
class Refusable {
 public:
  Refusable(T value) : state_(std::in_place_index<0>, std::move(value)) {}
  Refusable(Refusal r) : state_(std::in_place_index<1>, std::move(r)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() {
    if (!ok()) internal_error("refused result used: {}", std::get<1>(state_).why);
    return std::get<0>(state_);
  }
  const T& value() const {
    if (!ok()) internal_error("refused result used: {}", std::get<1>(state_).why);
    return std::get<0>(state_);
  }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Refusal& refusal() const {
    if (ok()) internal_error("a result that was not refused has no refusal");
    return std::get<1>(state_);
  }
  const std::string& why() const { return refusal().why; }

 private:
  std::variant<T, Refusal> state_;
};

// A step that either succeeds (nothing to return) or is refused.
template <>
class Refusable<void> {
 public:
  Refusable() = default;
  Refusable(Refusal r) : refusal_(std::move(r)), refused_(true) {}
  bool ok() const { return !refused_; }
  explicit operator bool() const { return ok(); }
  const Refusal& refusal() const {
    if (ok()) internal_error("a result that was not refused has no refusal");
    return refusal_;
  }
  const std::string& why() const { return refusal().why; }

 private:
  Refusal refusal_;
  bool refused_ = false;
};

}  // namespace orchid
