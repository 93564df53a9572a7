#include "ir/tensor.hpp"

#include <cmath>
#include <cstring>

#include "util/error.hpp"
#include "util/memory_budget.hpp"

namespace orchid {

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  const std::int64_t nbytes = checked_nbytes(shape_, dtype_size(dtype_), "tensor");
  check_memory_budget(nbytes,
                      fmt::format("a {} {} tensor", dtype_name(dtype_), shape_to_string(shape_)));
  bytes_.assign(static_cast<std::size_t>(nbytes), std::byte{0});
}

Tensor Tensor::view(DType dtype, Shape shape, std::byte* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.view_bytes_ = static_cast<std::size_t>(checked_nbytes(t.shape_, dtype_size(dtype), "tensor"));
  t.view_ = data;
  t.viewing_ = true;  // `data` may be null until rebind() points it somewhere
  return t;
}

Tensor Tensor::borrowed(DType dtype, Shape shape, std::byte* data, std::shared_ptr<void> owner) {
  if (!data || !owner) internal_error("Tensor::borrowed: no data or no owner");
  Tensor t = view(dtype, std::move(shape), data);
  t.owner_ = std::move(owner);
  return t;
}

void Tensor::rebind(std::byte* data) {
  if (!viewing_) fail("Tensor::rebind: not a view");
  if (!data) fail("Tensor::rebind: null data");
  view_ = data;
}

bool Tensor::operator==(const Tensor& other) const {
  return dtype_ == other.dtype_ && shape_ == other.shape_ && nbytes() == other.nbytes() &&
         (nbytes() == 0 || std::memcmp(raw(), other.raw(), nbytes()) == 0);
}

void Tensor::check_dtype(DType expected) const {
  if (expected != dtype_) {
    fail("tensor of dtype {} accessed as {}", dtype_name(dtype_), dtype_name(expected));
  }
}

double Tensor::get_as_double(std::int64_t i) const {
  const std::byte* p = raw() + static_cast<std::size_t>(i) * dtype_size(dtype_);
  switch (dtype_) {
    case DType::F32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::F16: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return half_to_float(v);
    }
    case DType::BF16: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return bfloat16_to_float(v);
    }
    case DType::F64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DType::I64: {
      std::int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    case DType::I32: {
      std::int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::I8:
      return static_cast<double>(static_cast<std::int8_t>(*p));
    case DType::U8:
      return static_cast<double>(static_cast<std::uint8_t>(*p));
    case DType::Bool:
      return *p != std::byte{0} ? 1.0 : 0.0;
  }
  return 0.0;
}

std::int64_t Tensor::get_as_int64(std::int64_t i) const {
  switch (dtype_) {
    case DType::I64: {
      std::int64_t v;
      std::memcpy(&v, raw() + static_cast<std::size_t>(i) * 8, 8);
      return v;
    }
    default: {
      const double v = get_as_double(i);
      return static_cast<std::int64_t>(v);
    }
  }
}

std::vector<std::int64_t> Tensor::to_int64s() const {
  std::vector<std::int64_t> out(static_cast<std::size_t>(numel()));
  for (std::int64_t i = 0; i < numel(); ++i) out[static_cast<std::size_t>(i)] = get_as_int64(i);
  return out;
}

std::vector<float> Tensor::to_floats() const {
  std::vector<float> out(static_cast<std::size_t>(numel()));
  for (std::int64_t i = 0; i < numel(); ++i) {
    out[static_cast<std::size_t>(i)] = static_cast<float>(get_as_double(i));
  }
  return out;
}

namespace {

template <typename T>
void store(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

}  // namespace

Tensor Tensor::cast(DType to) const {
  Tensor out(to, shape_);
  const std::size_t size = dtype_size(to);
  for (std::int64_t i = 0; i < numel(); ++i) {
    std::byte* p = out.raw() + static_cast<std::size_t>(i) * size;
    if (is_integer(dtype_) && is_integer(to)) {  // exact, no trip through double
      const std::int64_t v = get_as_int64(i);
      switch (to) {
        case DType::I64:
          store(p, v);
          break;
        case DType::I32:
          store(p, static_cast<std::int32_t>(v));
          break;
        case DType::I8:
          store(p, static_cast<std::int8_t>(v));
          break;
        default:
          store(p, static_cast<std::uint8_t>(v));
          break;
      }
      continue;
    }
    const double v = get_as_double(i);
    switch (to) {
      case DType::F32:
        store(p, static_cast<float>(v));
        break;
      case DType::F16:
        store(p, float_to_half(static_cast<float>(v)));
        break;
      case DType::BF16:
        store(p, float_to_bfloat16(static_cast<float>(v)));
        break;
      case DType::F64:
        store(p, v);
        break;
      case DType::I64:
        store(p, std::isfinite(v) ? static_cast<std::int64_t>(v) : std::int64_t{0});
        break;
      case DType::I32:
        store(p, std::isfinite(v) ? static_cast<std::int32_t>(v) : std::int32_t{0});
        break;
      case DType::I8:
        store(p, static_cast<std::int8_t>(std::isfinite(v) ? static_cast<std::int64_t>(v) : 0));
        break;
      case DType::U8:
        store(p, static_cast<std::uint8_t>(std::isfinite(v) ? static_cast<std::int64_t>(v) : 0));
        break;
      case DType::Bool:
        store(p, static_cast<std::uint8_t>(v != 0.0 ? 1 : 0));
        break;
    }
  }
  return out;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape_numel(shape) != numel()) {
    fail("cannot reshape tensor {} to {}", shape_to_string(shape_), shape_to_string(shape));
  }
  Tensor out = *this;
  out.shape_ = std::move(shape);
  return out;
}

}  // namespace orchid
