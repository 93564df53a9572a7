// Shape functions of the recurrent op family: LSTM, GRU and RNN (ONNX opset 7-22 forms,
// both layouts, all directions; optional inputs and outputs may be omitted).
#include "ir/ops/op_families.hpp"
#include "ir/ops/recurrent_params.hpp"

namespace orchid {

namespace {

void check_input(const ShapeContext& ctx, std::size_t i, const char* what, const Shape& expected,
                 std::initializer_list<DType> dtypes) {
  if (!ctx.has_input(i)) return;
  ctx.require_dtype(i, dtypes);
  if (ctx.input_shape(i) != expected) {
    ctx.fail("{} (input {}) has shape {}, expected {}", what, i,
             shape_to_string(ctx.input_shape(i)), shape_to_string(expected));
  }
}

std::vector<TensorType> infer_recurrent(const ShapeContext& ctx) {
  ctx.require_dtype(0, {DType::F32});
  ctx.require_dtype(1, {DType::F32});
  const RecurrentParams p = recurrent_params(ctx.node(), ctx.input_shape(0), ctx.input_shape(1));
  const std::int64_t rows = p.gates * p.hidden;
  check_input(ctx, 2, "R", {p.directions, rows, p.hidden}, {DType::F32});
  if (!ctx.has_input(2)) ctx.fail("input 2 (R) is missing");
  check_input(ctx, 3, "B", {p.directions, 2 * rows}, {DType::F32});
  check_input(ctx, 4, "sequence_lens", {p.batch}, {DType::I32, DType::I64});
  const Shape state = p.state_shape();
  check_input(ctx, 5, "initial_h", state, {DType::F32});
  if (p.cell == RecurrentParams::Cell::LSTM) {
    check_input(ctx, 6, "initial_c", state, {DType::F32});
    check_input(ctx, 7, "P", {p.directions, 3 * p.hidden}, {DType::F32});
  }
  std::vector<TensorType> out{{DType::F32, p.y_shape()}, {DType::F32, state}};
  if (p.cell == RecurrentParams::Cell::LSTM) out.push_back({DType::F32, state});
  return out;
}

}  // namespace

void register_recurrent_ops(OpSchemaTable& table) {
  table["GRU"] = {"GRU", 3, 6, 0, 2, infer_recurrent};
  table["LSTM"] = {"LSTM", 3, 8, 0, 3, infer_recurrent};
  table["RNN"] = {"RNN", 3, 6, 0, 2, infer_recurrent};
}

}  // namespace orchid
