// Reference kernels of the constant op family. Values are written as raw bytes of the
// output dtype so every dtype works the same way.
#include <algorithm>
#include <cstring>

#include "eval/reference/reference_kernels.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

// Repeats the one-element tensor `value` (already of the output dtype) over `out`.
void fill_with(Tensor& out, const Tensor& value) {
  const std::size_t elem = dtype_size(out.dtype());
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    std::memcpy(out.raw() + static_cast<std::size_t>(i) * elem, value.raw(), elem);
  }
}

void shape_op(const Node& node, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  const Shape& s = inputs[0]->shape();
  const auto rank = static_cast<std::int64_t>(s.size());
  auto clamp_axis = [rank](std::int64_t a) {
    return std::clamp<std::int64_t>(a < 0 ? a + rank : a, 0, rank);
  };
  const std::int64_t start = clamp_axis(node.attr_int("start", 0));
  auto out = outputs[0].values<std::int64_t>();
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = s[static_cast<std::size_t>(start) + i];
}

void size_op(const Node&, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  outputs[0].values<std::int64_t>()[0] = inputs[0]->numel();
}

void constant_of_shape(const Node& node, std::span<const Tensor* const>,
                       std::span<Tensor> outputs) {
  if (node.has_attribute("value")) fill_with(outputs[0], node.required_tensor("value"));
  // Otherwise the zero-filled f32 output is already right.
}

template <typename T>
void range_typed(const Tensor& start, const Tensor& delta, Tensor& out) {
  const T s = start.data<T>()[0];
  const T d = delta.data<T>()[0];
  T* y = out.data<T>();
  // ONNX defines element i as start + i * delta (not a running sum).
  for (std::int64_t i = 0; i < out.numel(); ++i) y[i] = static_cast<T>(s + static_cast<T>(i) * d);
}

void range(const Node& node, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  switch (outputs[0].dtype()) {
    case DType::F32:
      range_typed<float>(*inputs[0], *inputs[2], outputs[0]);
      break;
    case DType::F64:
      range_typed<double>(*inputs[0], *inputs[2], outputs[0]);
      break;
    case DType::I64:
      range_typed<std::int64_t>(*inputs[0], *inputs[2], outputs[0]);
      break;
    case DType::I32:
      range_typed<std::int32_t>(*inputs[0], *inputs[2], outputs[0]);
      break;
    default:
      fail("{}: unexpected dtype {}", node.describe(), dtype_name(outputs[0].dtype()));
  }
}

void identity(const Node&, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  if (inputs[0]->nbytes()) std::memcpy(outputs[0].raw(), inputs[0]->raw(), inputs[0]->nbytes());
}

void eye_like(const Node& node, std::span<const Tensor* const>, std::span<Tensor> outputs) {
  Tensor& y = outputs[0];
  const Tensor one = Tensor::from_vector<float>({}, {1.0f}).cast(y.dtype());
  const std::int64_t rows = y.shape()[0], cols = y.shape()[1];
  const std::int64_t k = node.attr_int("k", 0);
  const std::size_t elem = dtype_size(y.dtype());
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::int64_t j = i + k;
    if (j >= 0 && j < cols)
      std::memcpy(y.raw() + static_cast<std::size_t>(i * cols + j) * elem, one.raw(), elem);
  }
}

}  // namespace

void register_constant_kernels(ReferenceKernelTable& table) {
  table["Shape"] = shape_op;
  table["Size"] = size_op;
  table["ConstantOfShape"] = constant_of_shape;
  table["Range"] = range;
  table["Identity"] = identity;
  table["Dropout"] = identity;
  table["EyeLike"] = eye_like;
}

}  // namespace orchid
