#include "ir/dtype.hpp"

#include <cstring>

namespace orchid {

namespace {

// value >> shift, rounded to nearest with ties to even: the one rounding step of every
// narrowing float conversion here (f32 -> f16 normal and subnormal, f32 -> bf16).
std::uint32_t shift_right_rounding_to_even(std::uint32_t value, unsigned shift) {
  const std::uint32_t kept = value >> shift;
  const std::uint32_t rest = value & ((1u << shift) - 1u);
  const std::uint32_t halfway = 1u << (shift - 1);
  return kept + ((rest > halfway || (rest == halfway && (kept & 1u))) ? 1u : 0u);
}

}  // namespace

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return 4;
    case DType::F16:
      return 2;
    case DType::F64:
      return 8;
    case DType::I64:
      return 8;
    case DType::I32:
      return 4;
    case DType::I8:
      return 1;
    case DType::U8:
      return 1;
    case DType::Bool:
      return 1;
    case DType::BF16:
      return 2;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "f32";
    case DType::F16:
      return "f16";
    case DType::F64:
      return "f64";
    case DType::I64:
      return "i64";
    case DType::I32:
      return "i32";
    case DType::I8:
      return "i8";
    case DType::U8:
      return "u8";
    case DType::Bool:
      return "bool";
    case DType::BF16:
      return "bf16";
  }
  return "?";
}

bool is_float(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::F64 || dtype == DType::BF16;
}

bool is_half_float(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16;
}

float bfloat16_to_float(std::uint16_t bits) {
  const std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
  float out;
  std::memcpy(&out, &wide, sizeof out);
  return out;
}

std::uint16_t float_to_bfloat16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {  // nan stays a (quiet) nan
    return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  }
  return static_cast<std::uint16_t>(shift_right_rounding_to_even(bits, 16));  // inf on overflow
}

bool is_integer(DType dtype) {
  return dtype == DType::I64 || dtype == DType::I32 || dtype == DType::I8 || dtype == DType::U8;
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  std::uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      mantissa &= 0x3ffu;
      bits = sign | (exponent << 23) | (mantissa << 13);
    }
  } else if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

std::uint16_t float_to_half(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow
  if (abs < 0x38800000u) {  // subnormal or zero in half
    if (abs < 0x33000000u) return sign;
    const std::uint32_t shift = 113 - (abs >> 23);
    std::uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    return static_cast<std::uint16_t>(sign | shift_right_rounding_to_even(mantissa, shift + 13));
  }
  // Rebias the exponent (127 -> 15) in place; a carry out of the mantissa correctly
  // bumps the exponent (up to inf).
  return static_cast<std::uint16_t>(sign | shift_right_rounding_to_even(abs - (112u << 23), 13));
}

}  // namespace orchid
