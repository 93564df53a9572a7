// Shape functions of the reduction op family: Reduce*, ArgMax/ArgMin, TopK, CumSum,
// Softmax, LogSoftmax and Hardmax.
#include <string>

#include "ir/ops/op_families.hpp"
#include "ir/ops/reduction_util.hpp"

namespace orchid {

namespace {

using DTypes = std::initializer_list<DType>;

constexpr DTypes kFloat = {DType::F32, DType::F64};
constexpr DTypes kNumeric = {DType::F32, DType::F64, DType::I64, DType::I32, DType::I8, DType::U8};

void check_flag(const ShapeContext& ctx, const char* key, std::int64_t fallback) {
  const std::int64_t v = ctx.node().attr_int(key, fallback);
  if (v != 0 && v != 1) ctx.fail("attribute {} must be 0 or 1, got {}", key, v);
}

ShapeFunction reduce(DTypes allowed) {
  return [allowed](const ShapeContext& ctx) -> std::vector<TensorType> {
    ctx.require_dtype(0, allowed);
    check_flag(ctx, "keepdims", 1);
    check_flag(ctx, "noop_with_empty_axes", 0);
    const Tensor* axes_input = nullptr;
    if (ctx.has_input(1)) {
      axes_input = &ctx.required_constant(1, "reduction axes");
      if (axes_input->dtype() != DType::I64) {
        ctx.fail("axes input must be int64, got {}", dtype_name(axes_input->dtype()));
      }
    }
    const Shape& in = ctx.input_shape(0);
    const auto axes = reduction_util::resolve_reduction_axes(ctx.node(), axes_input,
                                                             static_cast<std::int64_t>(in.size()));
    if (axes.noop) return {ctx.input(0)};
    const bool keepdims = ctx.node().attr_int("keepdims", 1) != 0;
    Shape out;
    for (std::size_t d = 0; d < in.size(); ++d) {
      if (!axes.reduced[d]) {
        out.push_back(in[d]);
      } else if (keepdims) {
        out.push_back(1);
      }
    }
    return {{ctx.input_dtype(0), out}};
  };
}

// CumSum: same shape; the axis is a scalar input (constant in exported models).
std::vector<TensorType> infer_cumsum(const ShapeContext& ctx) {
  ctx.require_dtype(0, {DType::F32, DType::F64, DType::I64, DType::I32});
  ctx.require_dtype(1, {DType::I64, DType::I32});
  const Shape& in = ctx.input_shape(0);
  if (in.empty()) ctx.fail("input must have rank >= 1");
  if (shape_numel(ctx.input_shape(1)) != 1) ctx.fail("axis must be a scalar");
  if (const Tensor* axis = ctx.constant(1)) {  // else checked when the kernel runs
    normalize_axis(axis->to_int64s()[0], static_cast<std::int64_t>(in.size()),
                   ctx.node().describe());
  }
  return {{ctx.input_dtype(0), in}};
}

std::vector<TensorType> infer_arg(const ShapeContext& ctx) {
  ctx.require_dtype(0, kNumeric);
  check_flag(ctx, "keepdims", 1);
  check_flag(ctx, "select_last_index", 0);
  const Shape& in = ctx.input_shape(0);
  const auto rank = static_cast<std::int64_t>(in.size());
  if (rank == 0) ctx.fail("input must have rank >= 1");
  const auto axis = static_cast<std::size_t>(
      normalize_axis(ctx.node().attr_int("axis", 0), rank, ctx.node().describe()));
  if (in[axis] == 0) ctx.fail("cannot take the arg-extreme of an empty axis {}", axis);
  Shape out = in;
  if (ctx.node().attr_int("keepdims", 1) != 0) {
    out[axis] = 1;
  } else {
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(axis));
  }
  return {{DType::I64, out}};
}

// TopK: the K largest (or smallest) elements along `axis`, and their int64 indices.
// K is an input (opset 10+); static shapes need its value at import.
std::vector<TensorType> infer_topk(const ShapeContext& ctx) {
  ctx.require_dtype(0, {DType::F32, DType::F64, DType::I64, DType::I32});
  check_flag(ctx, "largest", 1);
  check_flag(ctx, "sorted", 1);
  if (!ctx.has_input(1)) {
    // Opsets 1-9 gave K as an attribute; the IR follows opset 17, where it is an input.
    if (ctx.node().has_attribute("k")) ctx.unsupported("the opset < 10 'k' attribute");
    ctx.fail("input 1 (K) is missing");
  }
  const Shape& in = ctx.input_shape(0);
  const auto rank = static_cast<std::int64_t>(in.size());
  if (rank == 0) ctx.fail("input must have rank >= 1");
  const auto axis = static_cast<std::size_t>(
      normalize_axis(ctx.node().attr_int("axis", -1), rank, ctx.node().describe()));
  const Tensor& k_input = ctx.required_constant(1, "K");
  if (k_input.dtype() != DType::I64 || k_input.numel() != 1) {
    ctx.fail("K must be one int64 value, got {} {}", dtype_name(k_input.dtype()),
             shape_to_string(k_input.shape()));
  }
  const std::int64_t k = k_input.to_int64s()[0];
  if (k < 0 || k > in[axis]) {
    ctx.fail("K = {} is out of range for axis {} of size {}", k, axis, in[axis]);
  }
  Shape out = in;
  out[axis] = k;
  return {{ctx.input_dtype(0), out}, {DType::I64, out}};
}

// Opset 13 semantics: normalise along one axis. Before opset 13 the input was flattened
// to 2-D at `axis` (default 1); that only agrees with the new form when the axis is the
// last one, so other cases are refused rather than silently computed differently.
std::vector<TensorType> infer_softmax(const ShapeContext& ctx) {
  ctx.require_dtype(0, kFloat);
  const Shape& in = ctx.input_shape(0);
  const auto rank = static_cast<std::int64_t>(in.size());
  if (rank == 0) ctx.fail("input must have rank >= 1");
  const std::int64_t fallback = ctx.opset() >= 13 ? -1 : 1;
  const std::int64_t axis =
      normalize_axis(ctx.node().attr_int("axis", fallback), rank, ctx.node().describe());
  if (ctx.opset() < 13 && axis != rank - 1) {
    ctx.unsupported("pre-opset-13 2-D coercion at axis {} of a rank-{} input", axis, rank);
  }
  return {ctx.input(0)};
}

}  // namespace

void register_reduction_ops(OpSchemaTable& table) {
  auto add = [&](const std::string& op, int min_in, int max_in, ShapeFunction f) {
    table[op] = OpSchema{op, min_in, max_in, 1, 1, std::move(f)};
  };
  // Integer inputs only where exact integer accumulation makes sense.
  for (const char* op :
       {"ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceSumSquare"}) {
    add(op, 1, 2, reduce(kNumeric));
  }
  for (const char* op : {"ReduceMean", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"}) {
    add(op, 1, 2, reduce(kFloat));
  }
  add("ArgMax", 1, 1, infer_arg);
  add("CumSum", 2, 2, infer_cumsum);
  // Both outputs are required by ONNX; the minimum of one admits fission's
  // Values-only primitive form.
  table["TopK"] = OpSchema{"TopK", 1, 2, 1, 2, infer_topk};
  add("ArgMin", 1, 1, infer_arg);
  add("Softmax", 1, 1, infer_softmax);
  add("LogSoftmax", 1, 1, infer_softmax);
  add("Hardmax", 1, 1, infer_softmax);
}

}  // namespace orchid
