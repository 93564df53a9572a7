// A dense, row-major tensor value: dtype, static shape and owned bytes — or, for the
// plan executor, a view of bytes owned elsewhere (an arena slot, a weight), so kernels
// can read and write those in place without a copy — or bytes borrowed from a file
// mapping that its copies keep alive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "ir/dtype.hpp"
#include "ir/shape.hpp"
#include "util/error.hpp"

namespace orchid {

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor.
  Tensor(DType dtype, Shape shape);

  template <typename T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values);
  static Tensor scalar_f32(float value) { return from_vector<float>({}, {value}); }
  static Tensor from_int64s(const std::vector<std::int64_t>& values) {
    return from_vector<std::int64_t>({static_cast<std::int64_t>(values.size())}, values);
  }
  // A view of numel(shape) elements at `data`, which the caller owns and keeps alive.
  // Copying a view copies the alias, not the bytes.
  static Tensor view(DType dtype, Shape shape, std::byte* data);
  // A tensor over bytes that `owner` keeps alive (a weight's file mapping:
  // util/safe_file.hpp); every copy shares `owner`, so the bytes live as long as any.
  static Tensor borrowed(DType dtype, Shape shape, std::byte* data, std::shared_ptr<void> owner);
  bool is_view() const { return viewing_; }
  // Points a view at other memory of the same size (per execution; no allocation).
  void rebind(std::byte* data);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  std::size_t rank() const { return shape_.size(); }
  std::int64_t numel() const { return shape_numel(shape_); }
  std::size_t nbytes() const { return viewing_ ? view_bytes_ : bytes_.size(); }

  std::byte* raw() { return viewing_ ? view_ : bytes_.data(); }
  const std::byte* raw() const { return viewing_ ? view_ : bytes_.data(); }

  // Typed views; throw orchid::Error if T does not match the dtype.
  template <typename T>
  T* data();
  template <typename T>
  const T* data() const;
  template <typename T>
  std::span<T> values() {
    return {data<T>(), static_cast<std::size_t>(numel())};
  }
  template <typename T>
  std::span<const T> values() const {
    return {data<T>(), static_cast<std::size_t>(numel())};
  }

  // Element i converted to double / int64 whatever the dtype (slow; for constants).
  double get_as_double(std::int64_t i) const;
  std::int64_t get_as_int64(std::int64_t i) const;
  // All elements as int64 (shape-carrying tensors) or as float.
  std::vector<std::int64_t> to_int64s() const;
  std::vector<float> to_floats() const;

  // Converts to another dtype (float <-> int truncates toward zero, like ONNX Cast).
  Tensor cast(DType to) const;
  // Same bytes, new shape of equal element count.
  Tensor reshaped(Shape shape) const;

  // Same dtype, shape and bytes (views compare by content too).
  bool operator==(const Tensor& other) const;

 private:
  void check_dtype(DType expected) const;

  DType dtype_ = DType::F32;
  Shape shape_;
  std::vector<std::byte> bytes_;
  std::byte* view_ = nullptr;
  std::size_t view_bytes_ = 0;
  bool viewing_ = false;
  std::shared_ptr<void> owner_;  // of view_'s bytes, where borrowed
};

template <typename T>
Tensor Tensor::from_vector(Shape shape, const std::vector<T>& values) {
  Tensor t(dtype_of<T>::value, std::move(shape));
  if (static_cast<std::int64_t>(values.size()) != t.numel()) {
    internal_error("Tensor::from_vector: {} values for a shape of {} elements", values.size(),
                   t.numel());
  }
  T* out = t.data<T>();
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

template <typename T>
T* Tensor::data() {
  check_dtype(dtype_of<T>::value);
  return reinterpret_cast<T*>(raw());
}

template <typename T>
const T* Tensor::data() const {
  check_dtype(dtype_of<T>::value);
  return reinterpret_cast<const T*>(raw());
}

}  // namespace orchid
