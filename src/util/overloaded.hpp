// Overloaded{lambda...}: one visitor for std::visit from a lambda per alternative.
#pragma once

namespace orchid {

template <typename... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <typename... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace orchid
