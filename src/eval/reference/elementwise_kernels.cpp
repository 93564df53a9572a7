// Reference kernels of the elementwise op family. Float math is evaluated in double and
// rounded once to the output type, so f32 results are as exact as the formula allows.
// Integer arithmetic wraps like two's complement (as numpy does) instead of invoking
// undefined behaviour on overflow.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <type_traits>

#include "eval/reference/elementwise_util.hpp"
#include "eval/reference/reference_kernels.hpp"

namespace orchid {

namespace {

using elementwise_util::dispatch;
using elementwise_util::for_each_broadcast;

using Inputs = std::span<const Tensor* const>;
using Outputs = std::span<Tensor>;

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T>;

// ---------------------------------------------------------------------------------------
// Unary ops. Each functor reads its attributes once in the constructor.

// Float-only math: evaluated in double, rounded to T.
#define ORCHID_FLOAT_UNARY(Name, expr)             \
  struct Name {                                    \
    explicit Name(const Node&) {}                  \
    template <typename T>                          \
    T operator()(T value) const {                  \
      const double x = static_cast<double>(value); \
      return static_cast<T>(expr);                 \
    }                                              \
  };

// exp(-|x|) never overflows, so both branches are safe for large |x|.
ORCHID_FLOAT_UNARY(SigmoidOp,
                   x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)))
ORCHID_FLOAT_UNARY(TanhOp, std::tanh(x))
// log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow for large x.
ORCHID_FLOAT_UNARY(SoftplusOp, std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x))))
ORCHID_FLOAT_UNARY(SoftsignOp, x / (1.0 + std::fabs(x)))
ORCHID_FLOAT_UNARY(ErfOp, std::erf(x))
ORCHID_FLOAT_UNARY(ExpOp, std::exp(x))
ORCHID_FLOAT_UNARY(LogOp, std::log(x))
ORCHID_FLOAT_UNARY(SqrtOp, std::sqrt(x))
ORCHID_FLOAT_UNARY(ReciprocalOp, 1.0 / x)
ORCHID_FLOAT_UNARY(FloorOp, std::floor(x))
ORCHID_FLOAT_UNARY(CeilOp, std::ceil(x))
ORCHID_FLOAT_UNARY(RoundOp, std::nearbyint(x))  // default mode: halves to even, as ONNX says
ORCHID_FLOAT_UNARY(SinOp, std::sin(x))
ORCHID_FLOAT_UNARY(CosOp, std::cos(x))
ORCHID_FLOAT_UNARY(TanOp, std::tan(x))
ORCHID_FLOAT_UNARY(AsinOp, std::asin(x))
ORCHID_FLOAT_UNARY(AcosOp, std::acos(x))
ORCHID_FLOAT_UNARY(AtanOp, std::atan(x))
ORCHID_FLOAT_UNARY(SinhOp, std::sinh(x))
ORCHID_FLOAT_UNARY(CoshOp, std::cosh(x))
ORCHID_FLOAT_UNARY(AsinhOp, std::asinh(x))
ORCHID_FLOAT_UNARY(AcoshOp, std::acosh(x))
ORCHID_FLOAT_UNARY(AtanhOp, std::atanh(x))
ORCHID_FLOAT_UNARY(HardSwishOp, x* std::clamp(x / 6.0 + 0.5, 0.0, 1.0))

#undef ORCHID_FLOAT_UNARY

struct LeakyReluOp {
  explicit LeakyReluOp(const Node& n) : alpha(n.attr_float("alpha", 0.01f)) {}
  template <typename T>
  T operator()(T v) const {
    const double x = static_cast<double>(v);
    return static_cast<T>(x < 0 ? alpha * x : x);
  }
  double alpha;
};

struct HardSigmoidOp {
  explicit HardSigmoidOp(const Node& n)
      : alpha(n.attr_float("alpha", 0.2f)), beta(n.attr_float("beta", 0.5f)) {}
  template <typename T>
  T operator()(T v) const {
    return static_cast<T>(std::clamp(alpha * static_cast<double>(v) + beta, 0.0, 1.0));
  }
  double alpha, beta;
};

// Mish(x) = x * tanh(softplus(x)).
struct MishOp {
  explicit MishOp(const Node&) {}
  template <typename T>
  T operator()(T v) const {
    const double x = static_cast<double>(v);
    return static_cast<T>(x * std::tanh(std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x)))));
  }
};

// Gelu (opset 20): exact x/2 (1 + erf(x / sqrt 2)) or approximate="tanh"
// x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
struct GeluOp {
  explicit GeluOp(const Node& n) : tanh_form(n.attr_string("approximate", "none") == "tanh") {}
  template <typename T>
  T operator()(T v) const {
    const double x = static_cast<double>(v);
    if (tanh_form) {
      const double inner = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
      return static_cast<T>(0.5 * x * (1.0 + std::tanh(inner)));
    }
    return static_cast<T>(0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))));
  }
  bool tanh_form;
};

// Swish (opset 24): x * sigmoid(alpha x).
struct SwishOp {
  explicit SwishOp(const Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <typename T>
  T operator()(T v) const {
    const double ax = alpha * static_cast<double>(v);
    const double sig = ax >= 0 ? 1.0 / (1.0 + std::exp(-ax)) : std::exp(ax) / (1.0 + std::exp(ax));
    return static_cast<T>(static_cast<double>(v) * sig);
  }
  double alpha;
};

struct EluOp {
  explicit EluOp(const Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <typename T>
  T operator()(T v) const {
    const double x = static_cast<double>(v);
    return static_cast<T>(x < 0 ? alpha * std::expm1(x) : x);
  }
  double alpha;
};

struct SeluOp {
  // ONNX's defaults are these float32 constants.
  explicit SeluOp(const Node& n)
      : alpha(n.attr_float("alpha", 1.67326319217681884765625f)),
        gamma(n.attr_float("gamma", 1.05070102214813232421875f)) {}
  template <typename T>
  T operator()(T v) const {
    const double x = static_cast<double>(v);
    return static_cast<T>(gamma * (x <= 0 ? alpha * std::expm1(x) : x));
  }
  double alpha, gamma;
};

struct CeluOp {
  explicit CeluOp(const Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <typename T>
  T operator()(T v) const {
    const double x = static_cast<double>(v);
    return static_cast<T>(std::max(0.0, x) + std::min(0.0, alpha * std::expm1(x / alpha)));
  }
  double alpha;
};

struct ThresholdedReluOp {
  explicit ThresholdedReluOp(const Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <typename T>
  T operator()(T v) const {
    return static_cast<double>(v) > alpha ? v : T{0};
  }
  double alpha;
};

struct ShrinkOp {
  explicit ShrinkOp(const Node& n)
      : bias(n.attr_float("bias", 0.0f)), lambd(n.attr_float("lambd", 0.5f)) {}
  template <typename T>
  T operator()(T v) const {
    const double x = static_cast<double>(v);
    return static_cast<T>(x < -lambd ? x + bias : (x > lambd ? x - bias : 0.0));
  }
  double bias, lambd;
};

struct ReluOp {
  explicit ReluOp(const Node&) {}
  template <typename T>
  T operator()(T x) const {
    return x < T{0} ? T{0} : x;  // written so NaN passes through
  }
};

template <typename T>
T wrap_neg(T x) {
  if constexpr (kIsFloat<T>) {
    return -x;
  } else {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(U{0} - static_cast<U>(x));
  }
}

struct NegOp {
  explicit NegOp(const Node&) {}
  template <typename T>
  T operator()(T x) const {
    return wrap_neg(x);
  }
};

struct AbsOp {
  explicit AbsOp(const Node&) {}
  template <typename T>
  T operator()(T x) const {
    if constexpr (kIsFloat<T>) {
      return std::fabs(x);
    } else if constexpr (std::is_unsigned_v<T>) {
      return x;
    } else {
      return x < 0 ? wrap_neg(x) : x;
    }
  }
};

struct SignOp {
  explicit SignOp(const Node&) {}
  template <typename T>
  T operator()(T x) const {
    if constexpr (kIsFloat<T>) {
      if (std::isnan(x)) return x;
    }
    if constexpr (std::is_signed_v<T>) {
      if (x < T{0}) return static_cast<T>(-1);
    }
    return x > T{0} ? T{1} : T{0};
  }
};

struct NotOp {
  explicit NotOp(const Node&) {}
  bool operator()(bool x) const { return !x; }
};

struct IsNaNOp {
  explicit IsNaNOp(const Node&) {}
  template <typename T>
  bool operator()(T x) const {
    return std::isnan(x);
  }
};

struct IsInfOp {
  explicit IsInfOp(const Node& n)
      : negative(n.attr_int("detect_negative", 1) != 0),
        positive(n.attr_int("detect_positive", 1) != 0) {}
  template <typename T>
  bool operator()(T x) const {
    return std::isinf(x) && (x > 0 ? positive : negative);
  }
  bool negative, positive;
};

template <typename Op, typename... Ts>
void unary_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Op op(node);
  const Tensor& x = *inputs[0];
  dispatch<Ts...>(x.dtype(), node, [&]<typename T>(T) {
    using R = decltype(op(T{}));
    const T* in = x.data<T>();
    R* out = outputs[0].data<R>();
    const std::int64_t n = x.numel();
    for (std::int64_t i = 0; i < n; ++i) out[i] = op(in[i]);
  });
}

// ---------------------------------------------------------------------------------------
// Binary ops with numpy broadcasting.

template <typename T>
T wrapping(T a, T b, char op) {
  using U = std::make_unsigned_t<T>;
  const U ua = static_cast<U>(a);
  const U ub = static_cast<U>(b);
  switch (op) {
    case '+':
      return static_cast<T>(static_cast<U>(ua + ub));
    case '-':
      return static_cast<T>(static_cast<U>(ua - ub));
    default:
      return static_cast<T>(static_cast<U>(ua * ub));
  }
}

#define ORCHID_ARITH_OP(Name, sym)                                                \
  struct Name {                                                                   \
    explicit Name(const Node&) {}                                                 \
    template <typename T>                                                         \
    T operator()(T a, T b) const {                                                \
      if constexpr (kIsFloat<T>) {                                                \
        return static_cast<T>(static_cast<double>(a) sym static_cast<double>(b)); \
      } else {                                                                    \
        return wrapping(a, b, #sym[0]);                                           \
      }                                                                           \
    }                                                                             \
  };

ORCHID_ARITH_OP(AddOp, +)
ORCHID_ARITH_OP(SubOp, -)
ORCHID_ARITH_OP(MulOp, *)

#undef ORCHID_ARITH_OP

struct DivOp {
  explicit DivOp(const Node& n) : node(&n) {}
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsFloat<T>) {
      return static_cast<T>(static_cast<double>(a) / static_cast<double>(b));
    } else {
      if (b == 0) fail("{}: integer division by zero", node->describe());
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return wrap_neg(a);  // avoids the overflow of MIN / -1
      }
      return static_cast<T>(a / b);  // C++ truncates toward zero, as ONNX integer Div does
    }
  }
  const Node* node;
};

struct ModOp {
  explicit ModOp(const Node& n) : node(&n), fmod(n.attr_int("fmod", 0) != 0) {}
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsFloat<T>) {
      return static_cast<T>(std::fmod(static_cast<double>(a), static_cast<double>(b)));
    } else {
      if (b == 0) fail("{}: integer modulo by zero", node->describe());
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return T{0};
      }
      const T r = static_cast<T>(a % b);  // sign of the dividend (C fmod)
      if (fmod) return r;
      // fmod=0: Python-style, the result takes the sign of the divisor.
      if constexpr (std::is_signed_v<T>) {
        if (r != 0 && ((r < 0) != (b < 0))) return static_cast<T>(r + b);
      }
      return r;
    }
  }
  const Node* node;
  bool fmod;
};

// numpy.maximum / minimum: NaN in either operand gives NaN.
struct MaxOp {
  explicit MaxOp(const Node&) {}
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsFloat<T>) {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
    }
    return a < b ? b : a;
  }
};

struct MinOp {
  explicit MinOp(const Node&) {}
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsFloat<T>) {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
    }
    return b < a ? b : a;
  }
};

#define ORCHID_COMPARE_OP(Name, expr) \
  struct Name {                       \
    explicit Name(const Node&) {}     \
    template <typename T>             \
    bool operator()(T a, T b) const { \
      return expr;                    \
    }                                 \
  };

ORCHID_COMPARE_OP(EqualOp, a == b)
ORCHID_COMPARE_OP(LessOp, a < b)
ORCHID_COMPARE_OP(GreaterOp, a > b)
ORCHID_COMPARE_OP(LessOrEqualOp, a <= b)
ORCHID_COMPARE_OP(GreaterOrEqualOp, a >= b)
ORCHID_COMPARE_OP(AndOp, a&& b)
ORCHID_COMPARE_OP(OrOp, a || b)
ORCHID_COMPARE_OP(XorOp, a != b)

#undef ORCHID_COMPARE_OP

struct PReluOp {
  explicit PReluOp(const Node&) {}
  template <typename T>
  T operator()(T x, T slope) const {
    if constexpr (kIsFloat<T>) {
      return x < 0 ? static_cast<T>(static_cast<double>(x) * static_cast<double>(slope)) : x;
    } else {
      return x < 0 ? wrapping(x, slope, '*') : x;
    }
  }
};

template <typename Op, typename... Ts>
void binary_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Op op(node);
  const Tensor& a = *inputs[0];
  const Tensor& b = *inputs[1];
  Tensor& y = outputs[0];
  dispatch<Ts...>(a.dtype(), node, [&]<typename T>(T) {
    using R = decltype(op(T{}, T{}));
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    R* py = y.data<R>();
    for_each_broadcast<2>(y.shape(), {&a.shape(), &b.shape()},
                          [&](std::int64_t o, const std::array<std::int64_t, 2>& off) {
                            py[o] = op(pa[off[0]], pb[off[1]]);
                          });
  });
}

// Integer power by squaring with wrapping multiplication; negative exponents truncate
// 1 / a^|e| toward zero like the float formula followed by a cast would.
template <typename T>
T integer_pow(T base, std::int64_t e) {
  if (e < 0) {
    if (base == 1) return 1;
    if (base == -1) return (e % 2 == 0) ? T{1} : static_cast<T>(-1);
    return 0;
  }
  T result = 1;
  while (e > 0) {
    if (e & 1) result = wrapping(result, base, '*');
    base = wrapping(base, base, '*');
    e >>= 1;
  }
  return result;
}

void pow_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Tensor& a = *inputs[0];
  const Tensor& b = *inputs[1];
  Tensor& y = outputs[0];
  dispatch<float, double, std::int64_t, std::int32_t>(a.dtype(), node, [&]<typename T>(T) {
    dispatch<float, double, std::int64_t, std::int32_t>(b.dtype(), node, [&]<typename E>(E) {
      const T* pa = a.data<T>();
      const E* pb = b.data<E>();
      T* py = y.data<T>();
      for_each_broadcast<2>(y.shape(), {&a.shape(), &b.shape()},
                            [&](std::int64_t o, const std::array<std::int64_t, 2>& off) {
                              const T base = pa[off[0]];
                              const E exponent = pb[off[1]];
                              if constexpr (!kIsFloat<T> && !kIsFloat<E>) {
                                py[o] = integer_pow(base, static_cast<std::int64_t>(exponent));
                              } else {
                                const double r = std::pow(static_cast<double>(base),
                                                          static_cast<double>(exponent));
                                if constexpr (kIsFloat<T>) {
                                  py[o] = static_cast<T>(r);
                                } else {
                                  py[o] = std::isfinite(r) ? static_cast<T>(r) : T{0};
                                }
                              }
                            });
    });
  });
}

// Max/Min/Sum/Mean over any number of inputs: fold input k into the output in turn.
template <typename Op, bool kMean, typename... Ts>
void variadic_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Op op(node);
  Tensor& y = outputs[0];
  dispatch<Ts...>(inputs[0]->dtype(), node, [&]<typename T>(T) {
    T* py = y.data<T>();
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const T* pk = inputs[k]->data<T>();
      for_each_broadcast<1>(y.shape(), {&inputs[k]->shape()},
                            [&](std::int64_t o, const std::array<std::int64_t, 1>& off) {
                              py[o] = k == 0 ? pk[off[0]] : op(py[o], pk[off[0]]);
                            });
    }
    if constexpr (kMean && kIsFloat<T>) {
      const double count = static_cast<double>(inputs.size());
      for (std::int64_t i = 0; i < y.numel(); ++i) {
        py[i] = static_cast<T>(static_cast<double>(py[i]) / count);
      }
    }
  });
}

// ---------------------------------------------------------------------------------------
// Where, Clip, Cast.

void where_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Tensor& cond = *inputs[0];
  const Tensor& x = *inputs[1];
  const Tensor& yv = *inputs[2];
  Tensor& out = outputs[0];
  dispatch<float, double, std::int64_t, std::int32_t, std::int8_t, std::uint8_t, bool>(
      x.dtype(), node, [&]<typename T>(T) {
        const bool* pc = cond.data<bool>();
        const T* px = x.data<T>();
        const T* py = yv.data<T>();
        T* po = out.data<T>();
        for_each_broadcast<3>(out.shape(), {&cond.shape(), &x.shape(), &yv.shape()},
                              [&](std::int64_t o, const std::array<std::int64_t, 3>& off) {
                                po[o] = pc[off[0]] ? px[off[1]] : py[off[2]];
                              });
      });
}

void clip_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Tensor& x = *inputs[0];
  dispatch<float, double, std::int64_t, std::int32_t, std::int8_t, std::uint8_t>(
      x.dtype(), node, [&]<typename T>(T) {
        // Absent bounds are +-inf for floats, so infinities pass through unchanged.
        constexpr T kLowest =
            kIsFloat<T> ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
        constexpr T kHighest =
            kIsFloat<T> ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
        const T lo = inputs.size() > 1 && inputs[1] ? inputs[1]->data<T>()[0] : kLowest;
        const T hi = inputs.size() > 2 && inputs[2] ? inputs[2]->data<T>()[0] : kHighest;
        const T* px = x.data<T>();
        T* py = outputs[0].data<T>();
        for (std::int64_t i = 0; i < x.numel(); ++i) {
          // Written as min(max(x, lo), hi) so lo > hi gives hi (numpy.clip) and NaN passes.
          T v = px[i] < lo ? lo : px[i];
          py[i] = v > hi ? hi : v;
        }
      });
}

void cast_kernel(const Node&, Inputs inputs, Outputs outputs) {
  // Filled in place: the output may be a view of the executor's arena.
  const Tensor converted = inputs[0]->cast(outputs[0].dtype());
  std::copy_n(converted.raw(), converted.nbytes(), outputs[0].raw());
}

}  // namespace

void register_elementwise_kernels(ReferenceKernelTable& table) {
  using std::int32_t;
  using std::int64_t;
  using std::int8_t;
  using std::uint8_t;

  table["Sigmoid"] = unary_kernel<SigmoidOp, float, double>;
  table["HardSigmoid"] = unary_kernel<HardSigmoidOp, float, double>;
  table["HardSwish"] = unary_kernel<HardSwishOp, float, double>;
  table["Tanh"] = unary_kernel<TanhOp, float, double>;
  table["Softplus"] = unary_kernel<SoftplusOp, float, double>;
  table["Softsign"] = unary_kernel<SoftsignOp, float, double>;
  table["Erf"] = unary_kernel<ErfOp, float, double>;
  table["Exp"] = unary_kernel<ExpOp, float, double>;
  table["Log"] = unary_kernel<LogOp, float, double>;
  table["Sqrt"] = unary_kernel<SqrtOp, float, double>;
  table["Reciprocal"] = unary_kernel<ReciprocalOp, float, double>;
  table["Floor"] = unary_kernel<FloorOp, float, double>;
  table["Ceil"] = unary_kernel<CeilOp, float, double>;
  table["Round"] = unary_kernel<RoundOp, float, double>;
  table["Sin"] = unary_kernel<SinOp, float, double>;
  table["Cos"] = unary_kernel<CosOp, float, double>;
  table["Tan"] = unary_kernel<TanOp, float, double>;
  table["Asin"] = unary_kernel<AsinOp, float, double>;
  table["Acos"] = unary_kernel<AcosOp, float, double>;
  table["Atan"] = unary_kernel<AtanOp, float, double>;
  table["Sinh"] = unary_kernel<SinhOp, float, double>;
  table["Cosh"] = unary_kernel<CoshOp, float, double>;
  table["Asinh"] = unary_kernel<AsinhOp, float, double>;
  table["Acosh"] = unary_kernel<AcoshOp, float, double>;
  table["Atanh"] = unary_kernel<AtanhOp, float, double>;
  table["Elu"] = unary_kernel<EluOp, float, double>;
  table["Mish"] = unary_kernel<MishOp, float, double>;
  table["Gelu"] = unary_kernel<GeluOp, float, double>;
  table["Swish"] = unary_kernel<SwishOp, float, double>;
  table["Selu"] = unary_kernel<SeluOp, float, double>;
  table["Celu"] = unary_kernel<CeluOp, float, double>;
  table["ThresholdedRelu"] = unary_kernel<ThresholdedReluOp, float, double>;
  table["LeakyRelu"] = unary_kernel<LeakyReluOp, float, double>;
  table["Shrink"] = unary_kernel<ShrinkOp, float, double, int64_t, int32_t>;
  table["Relu"] = unary_kernel<ReluOp, float, double, int64_t, int32_t, int8_t>;
  table["Neg"] = unary_kernel<NegOp, float, double, int64_t, int32_t, int8_t>;
  table["Abs"] = unary_kernel<AbsOp, float, double, int64_t, int32_t, int8_t, uint8_t>;
  table["Sign"] = unary_kernel<SignOp, float, double, int64_t, int32_t, int8_t, uint8_t>;
  table["Not"] = unary_kernel<NotOp, bool>;
  table["IsNaN"] = unary_kernel<IsNaNOp, float, double>;
  table["IsInf"] = unary_kernel<IsInfOp, float, double>;

  table["Add"] = binary_kernel<AddOp, float, double, int64_t, int32_t, int8_t, uint8_t>;
  table["Sub"] = binary_kernel<SubOp, float, double, int64_t, int32_t, int8_t, uint8_t>;
  table["Mul"] = binary_kernel<MulOp, float, double, int64_t, int32_t, int8_t, uint8_t>;
  table["Div"] = binary_kernel<DivOp, float, double, int64_t, int32_t, int8_t, uint8_t>;
  table["Mod"] = binary_kernel<ModOp, float, double, int64_t, int32_t, int8_t, uint8_t>;
  table["Pow"] = pow_kernel;
  table["PRelu"] = binary_kernel<PReluOp, float, double, int64_t, int32_t>;

  table["Max"] = variadic_kernel<MaxOp, false, float, double, int64_t, int32_t, int8_t, uint8_t>;
  table["Min"] = variadic_kernel<MinOp, false, float, double, int64_t, int32_t, int8_t, uint8_t>;
  table["Sum"] = variadic_kernel<AddOp, false, float, double, int64_t, int32_t, int8_t, uint8_t>;
  table["Mean"] = variadic_kernel<AddOp, true, float, double>;

  table["Equal"] = binary_kernel<EqualOp, float, double, int64_t, int32_t, int8_t, uint8_t, bool>;
  table["Less"] = binary_kernel<LessOp, float, double, int64_t, int32_t, int8_t, uint8_t>;
  table["Greater"] = binary_kernel<GreaterOp, float, double, int64_t, int32_t, int8_t, uint8_t>;
  table["LessOrEqual"] =
      binary_kernel<LessOrEqualOp, float, double, int64_t, int32_t, int8_t, uint8_t>;
  table["GreaterOrEqual"] =
      binary_kernel<GreaterOrEqualOp, float, double, int64_t, int32_t, int8_t, uint8_t>;
  table["And"] = binary_kernel<AndOp, bool>;
  table["Or"] = binary_kernel<OrOp, bool>;
  table["Xor"] = binary_kernel<XorOp, bool>;

  table["Where"] = where_kernel;
  table["Clip"] = clip_kernel;
  table["Cast"] = cast_kernel;
  table["CastLike"] = cast_kernel;
}

}  // namespace orchid
