// Element types a tensor can hold. Arithmetic happens in f32 (and f64/integers where
// the ONNX op is defined on them); f16 and bf16 are storage types: the reference
// interpreter widens them to f32 for each op and rounds the results back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace orchid {

enum class DType : std::uint8_t { F32, F16, F64, I64, I32, I8, U8, Bool, BF16 };

std::size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
bool is_float(DType dtype);
bool is_integer(DType dtype);
// f16 or bf16: 16-bit floats computed in f32.
bool is_half_float(DType dtype);

// IEEE half <-> float, round to nearest even.
float half_to_float(std::uint16_t bits);
std::uint16_t float_to_half(float value);
// bfloat16 (the top half of an f32) <-> float, round to nearest even.
float bfloat16_to_float(std::uint16_t bits);
std::uint16_t float_to_bfloat16(float value);

// Maps a C++ element type to its DType (float -> F32, int64_t -> I64, ...).
template <typename T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::F32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::F64;
};
template <>
struct dtype_of<std::int64_t> {
  static constexpr DType value = DType::I64;
};
template <>
struct dtype_of<std::int32_t> {
  static constexpr DType value = DType::I32;
};
template <>
struct dtype_of<std::int8_t> {
  static constexpr DType value = DType::I8;
};
template <>
struct dtype_of<std::uint8_t> {
  static constexpr DType value = DType::U8;
};
template <>
struct dtype_of<bool> {
  static constexpr DType value = DType::Bool;
};
template <>
struct dtype_of<std::uint16_t> {  // raw f16 bits
  static constexpr DType value = DType::F16;
};

}  // namespace orchid
