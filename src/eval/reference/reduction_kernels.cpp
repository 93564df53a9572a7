// Reference kernels of the reduction op family. Float reductions accumulate in double;
// integer ones accumulate in int64 with wrap-around, then narrow to the output type.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <type_traits>
#include <vector>

#include "eval/reference/elementwise_util.hpp"
#include "eval/reference/reference_kernels.hpp"
#include "ir/ops/reduction_util.hpp"

namespace orchid {

namespace {

using elementwise_util::dispatch;
using elementwise_util::for_each_broadcast;

using Inputs = std::span<const Tensor* const>;
using Outputs = std::span<Tensor>;

enum class Reduce { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

// Accumulator: double for float inputs, int64 for integer inputs.
template <typename T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, std::int64_t>;

std::int64_t wrap_add(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
std::int64_t wrap_mul(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
}

template <Reduce kKind, typename A>
A reduce_init() {
  constexpr bool kFloat = std::is_floating_point_v<A>;
  if constexpr (kKind == Reduce::Prod) return A{1};
  if constexpr (kKind == Reduce::Max || kKind == Reduce::LogSumExp) {
    return kFloat ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::lowest();
  }
  if constexpr (kKind == Reduce::Min) {
    return kFloat ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max();
  }
  return A{0};
}

template <Reduce kKind, typename A>
A reduce_step(A acc, A x) {
  if constexpr (std::is_floating_point_v<A>) {
    switch (kKind) {
      case Reduce::Max:
        return (std::isnan(x) || x > acc) ? x : acc;  // NaN propagates
      case Reduce::Min:
        return (std::isnan(x) || x < acc) ? x : acc;
      case Reduce::Prod:
        return acc * x;
      case Reduce::L1:
        return acc + std::fabs(x);
      case Reduce::L2:
      case Reduce::SumSquare:
        return acc + x * x;
      default:
        return acc + x;  // Sum, Mean, LogSum
    }
  } else {
    switch (kKind) {
      case Reduce::Max:
        return x > acc ? x : acc;
      case Reduce::Min:
        return x < acc ? x : acc;
      case Reduce::Prod:
        return wrap_mul(acc, x);
      case Reduce::L1:
        return wrap_add(acc, x < 0 ? wrap_mul(x, -1) : x);
      case Reduce::SumSquare:
        return wrap_add(acc, wrap_mul(x, x));
      default:
        return wrap_add(acc, x);
    }
  }
}

template <Reduce kKind, typename A>
A reduce_finish(A acc, std::int64_t count) {
  if constexpr (std::is_floating_point_v<A>) {
    switch (kKind) {
      case Reduce::Mean:
        return acc / static_cast<double>(count);
      case Reduce::L2:
        return std::sqrt(acc);
      case Reduce::LogSum:
        return std::log(acc);
      default:
        return acc;
    }
  } else {
    (void)count;
    return acc;
  }
}

template <Reduce kKind>
void reduce_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Tensor& x = *inputs[0];
  const Tensor* axes_input = inputs.size() > 1 ? inputs[1] : nullptr;
  const auto axes =
      reduction_util::resolve_reduction_axes(node, axes_input, static_cast<std::int64_t>(x.rank()));
  if (axes.noop) {
    std::copy_n(x.raw(), x.nbytes(), outputs[0].raw());  // in place: it may be a view
    return;
  }
  // Walking the input while broadcasting the keepdims-shaped output onto it maps every
  // input element to the output element it reduces into.
  const Shape kept = reduction_util::keepdims_shape(x.shape(), axes);
  std::int64_t count = 1;
  for (std::size_t d = 0; d < x.rank(); ++d) {
    if (axes.reduced[d]) count *= x.shape()[d];
  }
  auto body = [&]<typename T>(T) {
    using A = Acc<T>;
    const T* px = x.data<T>();
    T* py = outputs[0].data<T>();
    const auto n_out = static_cast<std::size_t>(shape_numel(kept));
    if constexpr (kKind == Reduce::LogSumExp) {
      // log(sum(exp(x))) = m + log(sum(exp(x - m))) with m the max: no overflow.
      std::vector<A> peak(n_out, reduce_init<Reduce::Max, A>());
      std::vector<A> sum(n_out, A{0});
      for_each_broadcast<1>(x.shape(), {&kept}, [&](std::int64_t i, const auto& off) {
        const auto o = static_cast<std::size_t>(off[0]);
        peak[o] = reduce_step<Reduce::Max, A>(peak[o], static_cast<A>(px[i]));
      });
      for_each_broadcast<1>(x.shape(), {&kept}, [&](std::int64_t i, const auto& off) {
        const auto o = static_cast<std::size_t>(off[0]);
        if (std::isfinite(peak[o])) sum[o] += std::exp(static_cast<A>(px[i]) - peak[o]);
      });
      for (std::size_t o = 0; o < n_out; ++o) {
        py[o] = static_cast<T>(std::isfinite(peak[o]) ? peak[o] + std::log(sum[o]) : peak[o]);
      }
    } else {
      std::vector<A> acc(n_out, reduce_init<kKind, A>());
      for_each_broadcast<1>(x.shape(), {&kept}, [&](std::int64_t i, const auto& off) {
        const auto o = static_cast<std::size_t>(off[0]);
        acc[o] = reduce_step<kKind, A>(acc[o], static_cast<A>(px[i]));
      });
      for (std::size_t o = 0; o < n_out; ++o) {
        py[o] = static_cast<T>(reduce_finish<kKind, A>(acc[o], count));
      }
    }
  };
  // Mean, L2 and the logs are float-only (the shape functions refuse integers).
  constexpr bool kFloatOnly = kKind == Reduce::Mean || kKind == Reduce::L2 ||
                              kKind == Reduce::LogSum || kKind == Reduce::LogSumExp;
  if constexpr (kFloatOnly) {
    dispatch<float, double>(x.dtype(), node, body);
  } else {
    dispatch<float, double, std::int64_t, std::int32_t, std::int8_t, std::uint8_t>(x.dtype(), node,
                                                                                   body);
  }
}

// Splits `shape` around `axis` into (outer, axis length, inner) for axis-wise loops.
struct AxisSplit {
  std::int64_t outer = 1, n = 1, inner = 1;
};

AxisSplit split_at(const Shape& shape, std::int64_t axis) {
  AxisSplit s;
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(shape.size()); ++d) {
    if (d < axis) s.outer *= shape[d];
    if (d == axis) s.n = shape[d];
    if (d > axis) s.inner *= shape[d];
  }
  return s;
}

template <bool kMax>
void arg_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Tensor& x = *inputs[0];
  const auto rank = static_cast<std::int64_t>(x.rank());
  const std::int64_t axis = normalize_axis(node.attr_int("axis", 0), rank, node.describe());
  const bool last = node.attr_int("select_last_index", 0) != 0;
  const AxisSplit s = split_at(x.shape(), axis);
  dispatch<float, double, std::int64_t, std::int32_t, std::int8_t, std::uint8_t>(
      x.dtype(), node, [&]<typename T>(T) {
        const T* px = x.data<T>();
        std::int64_t* py = outputs[0].data<std::int64_t>();
        for (std::int64_t o = 0; o < s.outer; ++o) {
          for (std::int64_t j = 0; j < s.inner; ++j) {
            const T* row = px + o * s.n * s.inner + j;
            std::int64_t best = 0;
            for (std::int64_t k = 1; k < s.n; ++k) {
              const T v = row[k * s.inner];
              const T b = row[best * s.inner];
              const bool better = kMax ? (v > b || (last && v == b)) : (v < b || (last && v == b));
              if (better) best = k;
            }
            py[o * s.inner + j] = best;
          }
        }
      });
}

// TopK order: NaN ranks above every number, as in numpy's sort that ONNX's reference
// implementation uses; NaNs are equal to each other.
template <typename T>
bool ranks_above(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return !std::isnan(b);
    if (std::isnan(b)) return false;
  }
  return a > b;
}

void topk_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Tensor& x = *inputs[0];
  const auto rank = static_cast<std::int64_t>(x.rank());
  const std::int64_t axis = normalize_axis(node.attr_int("axis", -1), rank, node.describe());
  const bool largest = node.attr_int("largest", 1) != 0;
  const std::int64_t k = inputs[1]->to_int64s().at(0);
  const AxisSplit s = split_at(x.shape(), axis);
  if (k > s.n) fail("{}: K = {} exceeds the axis size {}", node.describe(), k, s.n);
  // An omitted output arrives as an empty tensor (or not at all).
  Tensor* values = outputs.size() > 0 && !node.outputs[0].empty() ? &outputs[0] : nullptr;
  Tensor* indices = outputs.size() > 1 && !node.outputs[1].empty() ? &outputs[1] : nullptr;
  dispatch<float, double, std::int64_t, std::int32_t>(x.dtype(), node, [&]<typename T>(T) {
    const T* px = x.data<T>();
    std::vector<std::int64_t> order(static_cast<std::size_t>(s.n));
    for (std::int64_t o = 0; o < s.outer; ++o) {
      for (std::int64_t j = 0; j < s.inner; ++j) {
        const T* row = px + o * s.n * s.inner + j;
        std::iota(order.begin(), order.end(), std::int64_t{0});
        // Stable: among equal values the lower index comes first, as ONNX specifies.
        std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
          const T va = row[a * s.inner], vb = row[b * s.inner];
          return largest ? ranks_above(va, vb) : ranks_above(vb, va);
        });
        // sorted=0 leaves the order unspecified; sorted order is a valid answer.
        for (std::int64_t r = 0; r < k; ++r) {
          const std::int64_t at = (o * k + r) * s.inner + j;
          const std::int64_t src = order[static_cast<std::size_t>(r)];
          if (values) values->data<T>()[at] = row[src * s.inner];
          if (indices) indices->data<std::int64_t>()[at] = src;
        }
      }
    }
  });
}

enum class Normalize { Softmax, LogSoftmax, Hardmax };

template <Normalize kKind>
void softmax_kernel(const Node& node, Inputs inputs, Outputs outputs) {
  const Tensor& x = *inputs[0];
  const auto rank = static_cast<std::int64_t>(x.rank());
  const std::int64_t axis = normalize_axis(node.attr_int("axis", -1), rank, node.describe());
  const AxisSplit s = split_at(x.shape(), axis);
  dispatch<float, double>(x.dtype(), node, [&]<typename T>(T) {
    const T* px = x.data<T>();
    T* py = outputs[0].data<T>();
    for (std::int64_t o = 0; o < s.outer; ++o) {
      for (std::int64_t j = 0; j < s.inner; ++j) {
        const std::int64_t base = o * s.n * s.inner + j;
        auto at = [&](std::int64_t k) { return static_cast<double>(px[base + k * s.inner]); };
        // Subtracting the max keeps exp() in range for large inputs.
        double peak = -std::numeric_limits<double>::infinity();
        std::int64_t argmax = 0;
        for (std::int64_t k = 0; k < s.n; ++k) {
          if (at(k) > peak) {
            peak = at(k);
            argmax = k;
          }
        }
        if constexpr (kKind == Normalize::Hardmax) {
          for (std::int64_t k = 0; k < s.n; ++k) py[base + k * s.inner] = k == argmax ? 1 : 0;
        } else {
          double sum = 0;
          for (std::int64_t k = 0; k < s.n; ++k) sum += std::exp(at(k) - peak);
          for (std::int64_t k = 0; k < s.n; ++k) {
            const double shifted = at(k) - peak;
            const double v =
                kKind == Normalize::Softmax ? std::exp(shifted) / sum : shifted - std::log(sum);
            py[base + k * s.inner] = static_cast<T>(v);
          }
        }
      }
    }
  });
}

// Running sums along one axis, in the input's own type (exact for integers).
template <typename T>
void cumsum_typed(const Node& node, const Tensor& x, std::int64_t axis_value, Tensor& y) {
  const Shape& shape = x.shape();
  const auto axis = static_cast<std::size_t>(
      normalize_axis(axis_value, static_cast<std::int64_t>(shape.size()), node.describe()));
  const bool exclusive = node.attr_int("exclusive", 0) != 0;
  const bool reverse = node.attr_int("reverse", 0) != 0;
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (d < axis) outer *= shape[d];
    if (d > axis) inner *= shape[d];
  }
  const std::int64_t n = shape[axis];
  const T* in = x.data<T>();
  T* out = y.data<T>();
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      T sum = T(0);
      for (std::int64_t step = 0; step < n; ++step) {
        const std::int64_t k = reverse ? n - 1 - step : step;
        const std::int64_t at = (o * n + k) * inner + i;
        if (exclusive) {
          out[at] = sum;
          sum += in[at];
        } else {
          sum += in[at];
          out[at] = sum;
        }
      }
    }
  }
}

void cumsum_kernel(const Node& node, std::span<const Tensor* const> inputs,
                   std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const std::int64_t axis = inputs[1]->to_int64s().at(0);
  switch (x.dtype()) {
    case DType::F32:
      return cumsum_typed<float>(node, x, axis, outputs[0]);
    case DType::F64:
      return cumsum_typed<double>(node, x, axis, outputs[0]);
    case DType::I64:
      return cumsum_typed<std::int64_t>(node, x, axis, outputs[0]);
    case DType::I32:
      return cumsum_typed<std::int32_t>(node, x, axis, outputs[0]);
    default:
      unsupported("{}: CumSum of {}", node.describe(), dtype_name(x.dtype()));
  }
}

}  // namespace

void register_reduction_kernels(ReferenceKernelTable& table) {
  table["CumSum"] = cumsum_kernel;
  table["ReduceSum"] = reduce_kernel<Reduce::Sum>;
  table["ReduceMean"] = reduce_kernel<Reduce::Mean>;
  table["ReduceMax"] = reduce_kernel<Reduce::Max>;
  table["ReduceMin"] = reduce_kernel<Reduce::Min>;
  table["ReduceProd"] = reduce_kernel<Reduce::Prod>;
  table["ReduceL1"] = reduce_kernel<Reduce::L1>;
  table["ReduceL2"] = reduce_kernel<Reduce::L2>;
  table["ReduceSumSquare"] = reduce_kernel<Reduce::SumSquare>;
  table["ReduceLogSum"] = reduce_kernel<Reduce::LogSum>;
  table["ReduceLogSumExp"] = reduce_kernel<Reduce::LogSumExp>;
  table["ArgMax"] = arg_kernel<true>;
  table["ArgMin"] = arg_kernel<false>;
  table["TopK"] = topk_kernel;
  table["Softmax"] = softmax_kernel<Normalize::Softmax>;
  table["LogSoftmax"] = softmax_kernel<Normalize::LogSoftmax>;
  table["Hardmax"] = softmax_kernel<Normalize::Hardmax>;
}

}  // namespace orchid
