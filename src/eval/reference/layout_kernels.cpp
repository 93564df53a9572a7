// Reference kernels of the layout op family. Apart from linear Resize and reducing
// ScatterElements they never look at values: they move elements of `dtype_size` bytes,
// so one kernel serves every dtype.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "eval/reference/elementwise_util.hpp"
#include "eval/reference/reference_kernels.hpp"
#include "ir/ops/layout_params.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

using Strides = std::vector<std::int64_t>;

template <typename T>
void strided_copy_typed(T* out, const T* in, const Shape& shape, const Strides& strides,
                        std::int64_t offset) {
  if (shape_numel(shape) == 0) return;
  if (shape.empty()) {
    *out = in[offset];
    return;
  }
  const std::size_t last = shape.size() - 1;
  const std::int64_t inner = shape[last];
  const std::int64_t step = strides[last];
  std::vector<std::int64_t> idx(last, 0);
  std::int64_t base = offset;
  while (true) {
    for (std::int64_t j = 0; j < inner; ++j) *out++ = in[base + j * step];
    // Advance the odometer over the outer axes.
    std::size_t d = last;
    while (d > 0) {
      --d;
      base += strides[d];
      if (++idx[d] < shape[d]) break;
      base -= strides[d] * shape[d];
      idx[d] = 0;
      if (d == 0) return;
    }
    if (last == 0) return;
  }
}

// out[i...] = in[offset + sum_d i_d * strides[d]] over `shape`, strides in elements.
void strided_copy(std::byte* out, const std::byte* in, const Shape& shape, const Strides& strides,
                  std::int64_t offset, std::size_t elem) {
  switch (elem) {
    case 1:
      strided_copy_typed(reinterpret_cast<std::uint8_t*>(out),
                         reinterpret_cast<const std::uint8_t*>(in), shape, strides, offset);
      return;
    case 2:
      strided_copy_typed(reinterpret_cast<std::uint16_t*>(out),
                         reinterpret_cast<const std::uint16_t*>(in), shape, strides, offset);
      return;
    case 4:
      strided_copy_typed(reinterpret_cast<std::uint32_t*>(out),
                         reinterpret_cast<const std::uint32_t*>(in), shape, strides, offset);
      return;
    case 8:
      strided_copy_typed(reinterpret_cast<std::uint64_t*>(out),
                         reinterpret_cast<const std::uint64_t*>(in), shape, strides, offset);
      return;
    default:
      internal_error("layout kernel: unexpected element size {}", elem);
  }
}

void copy_bytes(const Node& node, std::span<const Tensor* const> inputs,
                std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  if (x.nbytes() != y.nbytes()) {
    fail("{}: input has {} bytes but output has {}", node.describe(), x.nbytes(), y.nbytes());
  }
  if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
}

void transpose(const Node& node, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const auto perm = transpose_perm(node, x.rank());
  const Strides in_strides = shape_strides(x.shape());
  Strides strides(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i)
    strides[i] = in_strides[static_cast<std::size_t>(perm[i])];
  strided_copy(outputs[0].raw(), x.raw(), outputs[0].shape(), strides, 0, dtype_size(x.dtype()));
}

void slice(const Node& node, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const Tensor* axes = inputs.size() > 3 ? inputs[3] : nullptr;
  const Tensor* steps = inputs.size() > 4 ? inputs[4] : nullptr;
  const SlicePlan plan = slice_plan(node, x.shape(), *inputs[1], *inputs[2], axes, steps);
  const Strides in_strides = shape_strides(x.shape());
  Strides strides(x.rank());
  std::int64_t offset = 0;
  for (std::size_t d = 0; d < x.rank(); ++d) {
    strides[d] = in_strides[d] * plan.step[d];
    offset += plan.start[d] * in_strides[d];
  }
  strided_copy(outputs[0].raw(), x.raw(), outputs[0].shape(), strides, offset,
               dtype_size(x.dtype()));
}

void expand(const Node&, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const Shape& out = outputs[0].shape();
  const Strides in_strides = shape_strides(x.shape());
  const std::size_t shift = out.size() - x.rank();
  Strides strides(out.size(), 0);  // broadcast axes repeat the same element
  for (std::size_t d = 0; d < x.rank(); ++d) {
    if (x.shape()[d] != 1) strides[shift + d] = in_strides[d];
  }
  strided_copy(outputs[0].raw(), x.raw(), out, strides, 0, dtype_size(x.dtype()));
}

void tile(const Node&, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  // Output axis of size r*d is the row-major pair (r, d): view it so and copy with
  // stride 0 over the repeat axes.
  const Tensor& x = *inputs[0];
  const Strides in_strides = shape_strides(x.shape());
  Shape view;
  Strides strides;
  for (std::size_t d = 0; d < x.rank(); ++d) {
    const std::int64_t reps = x.shape()[d] == 0 ? 0 : outputs[0].shape()[d] / x.shape()[d];
    view.push_back(reps);
    strides.push_back(0);
    view.push_back(x.shape()[d]);
    strides.push_back(in_strides[d]);
  }
  strided_copy(outputs[0].raw(), x.raw(), view, strides, 0, dtype_size(x.dtype()));
}

void depth_to_space(const Node& node, std::span<const Tensor* const> inputs,
                    std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const std::int64_t b = node.required_int("blocksize");
  const std::int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const std::int64_t co = c / (b * b);
  const bool crd = node.attr_string("mode", "DCR") == "CRD";
  // Output viewed as [N, C', H, b, W, b]; input channel = (b1, b2, c') for DCR or
  // (c', b1, b2) for CRD.
  const Shape view{n, co, h, b, w, b};
  const Strides strides = crd ? Strides{c * h * w, b * b * h * w, w, b * h * w, 1, h * w}
                              : Strides{c * h * w, h * w, w, b * co * h * w, 1, co * h * w};
  strided_copy(outputs[0].raw(), x.raw(), view, strides, 0, dtype_size(x.dtype()));
}

void space_to_depth(const Node& node, std::span<const Tensor* const> inputs,
                    std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const std::int64_t b = node.required_int("blocksize");
  const std::int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  // Output viewed as [N, b1, b2, C, H/b, W/b].
  const Shape view{n, b, b, c, h / b, w / b};
  const Strides strides{c * h * w, w, 1, h * w, b * w, b};
  strided_copy(outputs[0].raw(), x.raw(), view, strides, 0, dtype_size(x.dtype()));
}

// Bytes before `axis` (outer count) and per unit of `axis` (inner bytes).
void outer_inner(const Shape& shape, std::size_t axis, std::size_t elem, std::int64_t& outer,
                 std::size_t& inner_bytes) {
  outer = 1;
  std::int64_t inner = 1;
  for (std::size_t d = 0; d < shape.size(); ++d)
    (d < axis ? outer : inner) *= d == axis ? 1 : shape[d];
  inner_bytes = static_cast<std::size_t>(inner) * elem;
}

void concat(const Node& node, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  Tensor& y = outputs[0];
  const auto axis = static_cast<std::size_t>(normalize_axis(
      node.required_int("axis"), static_cast<std::int64_t>(y.rank()), node.describe()));
  const std::size_t elem = dtype_size(y.dtype());
  std::int64_t outer;
  std::size_t inner;
  outer_inner(y.shape(), axis, elem, outer, inner);
  std::byte* out = y.raw();
  for (std::int64_t o = 0; o < outer; ++o) {
    for (const Tensor* t : inputs) {
      const std::size_t chunk = static_cast<std::size_t>(t->shape()[axis]) * inner;
      if (chunk) std::memcpy(out, t->raw() + static_cast<std::size_t>(o) * chunk, chunk);
      out += chunk;
    }
  }
}

void split(const Node& node, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const auto axis = static_cast<std::size_t>(normalize_axis(
      node.attr_int("axis", 0), static_cast<std::int64_t>(x.rank()), node.describe()));
  const std::size_t elem = dtype_size(x.dtype());
  std::int64_t outer;
  std::size_t inner;
  outer_inner(x.shape(), axis, elem, outer, inner);
  // Sizes come from the plan, not the outputs, because an omitted output is empty.
  const Tensor* split_input = inputs.size() > 1 ? inputs[1] : nullptr;
  const auto sizes = split_sizes(node, x.shape()[axis], split_input, outputs.size());
  const std::byte* in = x.raw();
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      const std::size_t chunk = static_cast<std::size_t>(sizes[k]) * inner;
      if (chunk && outputs[k].nbytes()) {
        std::memcpy(outputs[k].raw() + static_cast<std::size_t>(o) * chunk, in, chunk);
      }
      in += chunk;
    }
  }
}

void scatter_nd(const Node& node, std::span<const Tensor* const> inputs,
                std::span<Tensor> outputs) {
  const Tensor& data = *inputs[0];
  const Tensor& indices = *inputs[1];
  const Tensor& updates = *inputs[2];
  Tensor& out = outputs[0];
  std::memcpy(out.raw(), data.raw(), data.nbytes());
  const auto k = static_cast<std::size_t>(indices.shape().back());
  const auto strides = shape_strides(data.shape());
  const std::int64_t slice = k == data.rank() ? 1 : strides[k - 1];
  const std::size_t esize = dtype_size(data.dtype());
  const std::int64_t count = indices.numel() / static_cast<std::int64_t>(k);
  const std::int64_t* idx = indices.data<std::int64_t>();
  for (std::int64_t i = 0; i < count; ++i) {
    std::int64_t offset = 0;
    for (std::size_t a = 0; a < k; ++a) {
      std::int64_t v = idx[i * static_cast<std::int64_t>(k) + static_cast<std::int64_t>(a)];
      const std::int64_t dim = data.shape()[a];
      if (v < 0) v += dim;
      if (v < 0 || v >= dim) fail("{}: index {} out of range for axis {}", node.describe(), v, a);
      offset += v * strides[a];
    }
    std::memcpy(out.raw() + static_cast<std::size_t>(offset) * esize,
                updates.raw() + static_cast<std::size_t>(i * slice) * esize,
                static_cast<std::size_t>(slice) * esize);
  }
}

void gather_elements(const Node& node, std::span<const Tensor* const> inputs,
                     std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const Tensor& idx = *inputs[1];
  Tensor& y = outputs[0];
  const std::size_t rank = x.rank();
  const auto axis = static_cast<std::size_t>(
      normalize_axis(node.attr_int("axis", 0), static_cast<std::int64_t>(rank), node.describe()));
  const std::size_t elem = dtype_size(x.dtype());
  const Strides in_strides = shape_strides(x.shape());
  const std::vector<std::int64_t> index = idx.to_int64s();
  const std::int64_t dim = x.shape()[axis];
  std::vector<std::int64_t> pos(rank, 0);
  std::byte* out = y.raw();
  for (std::int64_t flat = 0; flat < y.numel(); ++flat) {
    std::int64_t v = index[static_cast<std::size_t>(flat)];
    if (v < 0) v += dim;
    if (v < 0 || v >= dim) fail("{}: index {} out of range for axis {}", node.describe(), v, axis);
    std::int64_t src = 0;
    for (std::size_t d = 0; d < rank; ++d) src += (d == axis ? v : pos[d]) * in_strides[d];
    std::memcpy(out, x.raw() + static_cast<std::size_t>(src) * elem, elem);
    out += elem;
    for (std::size_t d = rank; d-- > 0;) {
      if (++pos[d] < y.shape()[d]) break;
      pos[d] = 0;
    }
  }
}

// GatherND: each index tuple (within its batch) selects one contiguous slice of data's
// trailing axes, copied to the output in indices order.
void gather_nd(const Node& node, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const Tensor& idx = *inputs[1];
  const Shape& ds = x.shape();
  const auto b = static_cast<std::size_t>(node.attr_int("batch_dims", 0));
  const auto k = static_cast<std::size_t>(idx.shape().back());
  const Strides strides = shape_strides(ds);
  const std::vector<std::int64_t> index = idx.to_int64s();
  const auto tuples = static_cast<std::int64_t>(index.size() / k);
  if (tuples == 0) return;
  std::int64_t batches = 1;
  for (std::size_t d = 0; d < b; ++d) batches *= ds[d];
  const std::int64_t per_batch = tuples / batches;
  const std::int64_t batch_size = b == 0 ? x.numel() : strides[b - 1];
  const std::int64_t slice = b + k == ds.size() ? 1 : strides[b + k - 1];
  const std::size_t elem = dtype_size(x.dtype());
  const std::size_t bytes = static_cast<std::size_t>(slice) * elem;
  std::byte* out = outputs[0].raw();
  for (std::int64_t t = 0; t < tuples; ++t) {
    std::int64_t src = (t / per_batch) * batch_size;
    for (std::size_t a = 0; a < k; ++a) {
      std::int64_t v = index[static_cast<std::size_t>(t) * k + a];
      const std::int64_t dim = ds[b + a];
      if (v < -dim || v >= dim) {
        fail("{}: index {} is out of range for axis {} of size {}", node.describe(), v, b + a, dim);
      }
      if (v < 0) v += dim;
      src += v * strides[b + a];
    }
    if (bytes) std::memcpy(out, x.raw() + static_cast<std::size_t>(src) * elem, bytes);
    out += bytes;
  }
}

// a + b or a * b; integers wrap around instead of overflowing.
template <typename T>
T combine(T a, T b, bool add) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(add ? static_cast<U>(static_cast<U>(a) + static_cast<U>(b))
                              : static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return add ? a + b : a * b;
  }
}

// ScatterElements: output = data; then, in indices order, each update replaces (or is
// added to / multiplied into) the element its index addresses. With duplicate indices
// and no reduction the last update wins, as in ONNX Runtime.
void scatter_elements(const Node& node, std::span<const Tensor* const> inputs,
                      std::span<Tensor> outputs) {
  const Tensor& data = *inputs[0];
  const Tensor& idx = *inputs[1];
  const Tensor& updates = *inputs[2];
  Tensor& out = outputs[0];
  if (data.nbytes()) std::memcpy(out.raw(), data.raw(), data.nbytes());
  const std::size_t rank = data.rank();
  const auto axis = static_cast<std::size_t>(
      normalize_axis(node.attr_int("axis", 0), static_cast<std::int64_t>(rank), node.describe()));
  const Strides strides = shape_strides(data.shape());
  const std::vector<std::int64_t> index = idx.to_int64s();
  const std::int64_t dim = data.shape()[axis];
  // Output element of every update, in indices' row-major order.
  std::vector<std::int64_t> target(index.size());
  std::vector<std::int64_t> pos(rank, 0);
  for (std::size_t flat = 0; flat < index.size(); ++flat) {
    std::int64_t v = index[flat];
    if (v < -dim || v >= dim) {
      fail("{}: index {} is out of range for axis {} of size {}", node.describe(), v, axis, dim);
    }
    if (v < 0) v += dim;
    std::int64_t dst = 0;
    for (std::size_t d = 0; d < rank; ++d) dst += (d == axis ? v : pos[d]) * strides[d];
    target[flat] = dst;
    for (std::size_t d = rank; d-- > 0;) {
      if (++pos[d] < idx.shape()[d]) break;
      pos[d] = 0;
    }
  }
  const std::string reduction = node.attr_string("reduction", "none");
  if (reduction == "none") {
    const std::size_t elem = dtype_size(data.dtype());
    for (std::size_t flat = 0; flat < target.size(); ++flat) {
      std::memcpy(out.raw() + static_cast<std::size_t>(target[flat]) * elem,
                  updates.raw() + flat * elem, elem);
    }
    return;
  }
  const bool add = reduction == "add";
  elementwise_util::dispatch<float, double, std::int64_t, std::int32_t>(
      data.dtype(), node, [&]<typename T>(T) {
        T* y = out.data<T>();
        const T* u = updates.data<T>();
        for (std::size_t flat = 0; flat < target.size(); ++flat) {
          T& e = y[target[flat]];
          e = combine(e, u[flat], add);
        }
      });
}

void gather(const Node& node, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const Tensor& idx = *inputs[1];
  const auto axis = static_cast<std::size_t>(normalize_axis(
      node.attr_int("axis", 0), static_cast<std::int64_t>(x.rank()), node.describe()));
  const std::size_t elem = dtype_size(x.dtype());
  std::int64_t outer;
  std::size_t inner;
  outer_inner(x.shape(), axis, elem, outer, inner);
  const std::int64_t dim = x.shape()[axis];
  const std::vector<std::int64_t> indices = idx.to_int64s();
  std::byte* out = outputs[0].raw();
  for (std::int64_t o = 0; o < outer; ++o) {
    const std::byte* base = x.raw() + static_cast<std::size_t>(o * dim) * inner;
    for (std::int64_t i : indices) {
      if (i < -dim || i >= dim) {
        fail("{}: index {} is out of range for axis {} of size {}", node.describe(), i, axis, dim);
      }
      if (i < 0) i += dim;
      if (inner) std::memcpy(out, base + static_cast<std::size_t>(i) * inner, inner);
      out += inner;
    }
  }
}

// Source index along one axis for output position o of a padded axis; -1 = constant.
std::int64_t pad_source(std::int64_t o, std::int64_t before, std::int64_t n, int mode) {
  std::int64_t i = o - before;
  if (i >= 0 && i < n) return i;
  if (mode == 0) return -1;
  if (mode == 1) return i < 0 ? 0 : n - 1;  // edge
  if (n == 1) return 0;                     // reflect on a single element
  const std::int64_t period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

void pad(const Node& node, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  const Tensor* axes = inputs.size() > 3 ? inputs[3] : nullptr;
  const PadPlan plan = pad_plan(node, x.shape(), *inputs[1], axes);
  const std::string mode_name = node.attr_string("mode", "constant");
  const int mode = mode_name == "constant" ? 0 : mode_name == "edge" ? 1 : 2;
  const std::size_t elem = dtype_size(x.dtype());
  std::vector<std::byte> fill(elem, std::byte{0});
  if (inputs.size() > 2 && inputs[2] && inputs[2]->numel() > 0) {
    std::memcpy(fill.data(), inputs[2]->raw(), elem);
  }
  // Per-axis source tables, then one pass over the output.
  const std::size_t rank = x.rank();
  std::vector<std::vector<std::int64_t>> source(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    for (std::int64_t o = 0; o < y.shape()[d]; ++o) {
      source[d].push_back(pad_source(o, plan.before[d], x.shape()[d], mode));
    }
  }
  const Strides in_strides = shape_strides(x.shape());
  std::vector<std::int64_t> idx(rank, 0);
  std::byte* out = y.raw();
  for (std::int64_t flat = 0; flat < y.numel(); ++flat) {
    std::int64_t src = 0;
    for (std::size_t d = 0; d < rank && src >= 0; ++d) {
      const std::int64_t s = source[d][static_cast<std::size_t>(idx[d])];
      src = s < 0 ? -1 : src + s * in_strides[d];
    }
    std::memcpy(out, src < 0 ? fill.data() : x.raw() + static_cast<std::size_t>(src) * elem, elem);
    out += elem;
    for (std::size_t d = rank; d-- > 0;) {
      if (++idx[d] < y.shape()[d]) break;
      idx[d] = 0;
    }
  }
}

void resize(const Node& node, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  const Tensor* scales = inputs.size() > 2 ? inputs[2] : nullptr;
  const Tensor* sizes = inputs.size() > 3 ? inputs[3] : nullptr;
  const ResizePlan plan = resize_plan(node, x.shape(), scales, sizes);
  const std::string ctm = node.attr_string("coordinate_transformation_mode", "half_pixel");
  const std::size_t rank = x.rank();
  if (y.numel() == 0) return;

  if (node.attr_string("mode", "nearest") == "nearest") {
    const std::string nm = node.attr_string("nearest_mode", "round_prefer_floor");
    // Nearest is a gather with one source index per output coordinate and axis.
    std::vector<std::vector<std::int64_t>> source(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      for (std::int64_t o = 0; o < y.shape()[d]; ++o) {
        source[d].push_back(resize_nearest_index(
            resize_source(ctm, o, plan.scales[d], x.shape()[d], y.shape()[d]), nm, x.shape()[d]));
      }
    }
    const Strides in_strides = shape_strides(x.shape());
    const std::size_t elem = dtype_size(x.dtype());
    std::vector<std::int64_t> idx(rank, 0);
    std::byte* out = y.raw();
    for (std::int64_t flat = 0; flat < y.numel(); ++flat) {
      std::int64_t src = 0;
      for (std::size_t d = 0; d < rank; ++d) {
        src += source[d][static_cast<std::size_t>(idx[d])] * in_strides[d];
      }
      std::memcpy(out, x.raw() + static_cast<std::size_t>(src) * elem, elem);
      out += elem;
      for (std::size_t d = rank; d-- > 0;) {
        if (++idx[d] < y.shape()[d]) break;
        idx[d] = 0;
      }
    }
    return;
  }

  // Linear and cubic are separable: interpolate one axis at a time.
  const bool cubic = node.attr_string("mode", "nearest") == "cubic";
  const double cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
  const bool exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  const bool antialias = node.attr_int("antialias", 0) != 0;
  std::vector<float> cur(x.values<float>().begin(), x.values<float>().end());
  Shape shape = x.shape();
  for (std::size_t d = 0; d < rank; ++d) {
    const std::int64_t in = shape[d], out_len = y.shape()[d];
    if (in == out_len && plan.scales[d] == 1.0) continue;  // identity on this axis
    std::int64_t outer = 1, inner = 1;
    for (std::size_t e = 0; e < rank; ++e) {
      if (e < d) outer *= shape[e];
      if (e > d) inner *= shape[e];
    }
    std::vector<float> next(static_cast<std::size_t>(outer * out_len * inner));
    // Antialiasing stretches the filter on downscaled axes only.
    const bool stretched = antialias && plan.scales[d] < 1.0;
    if (cubic || stretched) {
      for (std::int64_t o = 0; o < out_len; ++o) {
        const double src = resize_source(ctm, o, plan.scales[d], in, out_len);
        const auto taps = stretched ? resize_antialias_taps(src, in, plan.scales[d], cubic, cubic_a,
                                                            exclude_outside)
                                    : resize_cubic_taps(src, in, cubic_a, exclude_outside);
        for (std::int64_t b = 0; b < outer; ++b) {
          float* dst = next.data() + (b * out_len + o) * inner;
          for (std::int64_t j = 0; j < inner; ++j) {
            double acc = 0;
            for (const auto& [index, weight] : taps) {
              acc += weight * static_cast<double>(
                                  cur[static_cast<std::size_t>((b * in + index) * inner + j)]);
            }
            dst[j] = static_cast<float>(acc);
          }
        }
      }
      cur.swap(next);
      shape[d] = out_len;
      continue;
    }
    for (std::int64_t o = 0; o < out_len; ++o) {
      const double src = resize_source(ctm, o, plan.scales[d], in, out_len);
      const double fl = std::floor(src);
      const double r = src - fl;
      const auto i0 = std::clamp<std::int64_t>(static_cast<std::int64_t>(fl), 0, in - 1);
      const auto i1 = std::clamp<std::int64_t>(static_cast<std::int64_t>(fl) + 1, 0, in - 1);
      for (std::int64_t b = 0; b < outer; ++b) {
        const float* a0 = cur.data() + (b * in + i0) * inner;
        const float* a1 = cur.data() + (b * in + i1) * inner;
        float* dst = next.data() + (b * out_len + o) * inner;
        for (std::int64_t j = 0; j < inner; ++j) {
          dst[j] = r == 0.0
                       ? a0[j]
                       : static_cast<float>((1.0 - r) * a0[j] + r * static_cast<double>(a1[j]));
        }
      }
    }
    cur.swap(next);
    shape[d] = out_len;
  }
  std::memcpy(y.raw(), cur.data(), cur.size() * sizeof(float));
}

// Col2Im: every element of each sliding block is added to its image position (padding
// positions are dropped).
void col2im(const Node& node, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const Col2ImPlan p = col2im_plan(node, x.shape(), *inputs[1], *inputs[2]);
  const std::size_t dims = p.image.size();
  const std::int64_t block_size = shape_numel(p.block);
  const std::int64_t count = shape_numel(p.positions);
  const std::int64_t image_size = shape_numel(p.image);
  std::vector<double> out(static_cast<std::size_t>(shape_numel(p.output)), 0.0);
  std::vector<std::int64_t> k(dims), pos(dims);
  for (std::int64_t n = 0; n < x.shape()[0]; ++n) {
    for (std::int64_t c = 0; c < p.channels; ++c) {
      for (std::int64_t kb = 0; kb < block_size; ++kb) {
        for (std::int64_t r = kb, d = static_cast<std::int64_t>(dims) - 1; d >= 0; --d) {
          k[static_cast<std::size_t>(d)] = r % p.block[static_cast<std::size_t>(d)];
          r /= p.block[static_cast<std::size_t>(d)];
        }
        const std::int64_t row = (n * x.shape()[1] + c * block_size + kb) * count;
        for (std::int64_t l = 0; l < count; ++l) {
          for (std::int64_t r = l, d = static_cast<std::int64_t>(dims) - 1; d >= 0; --d) {
            pos[static_cast<std::size_t>(d)] = r % p.positions[static_cast<std::size_t>(d)];
            r /= p.positions[static_cast<std::size_t>(d)];
          }
          std::int64_t at = 0;
          bool inside = true;
          for (std::size_t d = 0; d < dims; ++d) {
            const std::int64_t i = pos[d] * p.strides[d] - p.pads_begin[d] + k[d] * p.dilations[d];
            inside = inside && i >= 0 && i < p.image[d];
            at = at * p.image[d] + i;
          }
          if (inside) {
            out[static_cast<std::size_t>((n * p.channels + c) * image_size + at)] +=
                x.get_as_double(row + l);
          }
        }
      }
    }
  }
  elementwise_util::dispatch<float, double>(x.dtype(), node, [&]<typename T>(T) {
    T* py = outputs[0].data<T>();
    for (std::size_t i = 0; i < out.size(); ++i) py[i] = static_cast<T>(out[i]);
  });
}

}  // namespace

void register_layout_kernels(ReferenceKernelTable& table) {
  table["Col2Im"] = col2im;
  table["Transpose"] = transpose;
  table["Reshape"] = copy_bytes;
  table["Flatten"] = copy_bytes;
  table["Squeeze"] = copy_bytes;
  table["Unsqueeze"] = copy_bytes;
  table["Concat"] = concat;
  table["Split"] = split;
  table["Slice"] = slice;
  table["Pad"] = pad;
  table["Resize"] = resize;
  table["Gather"] = gather;
  table["GatherElements"] = gather_elements;
  table["ScatterND"] = scatter_nd;
  table["GatherND"] = gather_nd;
  table["ScatterElements"] = scatter_elements;
  table["Expand"] = expand;
  table["Tile"] = tile;
  table["DepthToSpace"] = depth_to_space;
  table["SpaceToDepth"] = space_to_depth;
}

}  // namespace orchid
