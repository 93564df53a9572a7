// Splitting a layer's linear op over a group's ranks (see op_shards.hpp).
#include "distributed/op_shards.hpp"

#include <algorithm>
#include <optional>

#include "distributed/tensor_slices.hpp"
#include "ir/op_registry.hpp"

namespace orchid::distributed {

using mapping::Strategy;

namespace {

bool is_f32_typed(const Graph& g, const std::string& name) {
  if (!g.has_tensor(name)) return false;
  const TensorInfo& t = g.tensor(name);
  return (t.has_type || t.is_constant()) && !t.dynamic && t.dtype == DType::F32;
}

// The weight axis that indexes output features of Gemm/MatMul.
int weight_out_axis(const Node& node) {
  return node.op_type == "Gemm" && node.attr_int("transB", 0) != 0 ? 0 : 1;
}

// Output rows [ob, oe) of a Conv read input rows [first, last] (may lie in the padding).
struct RowWindow {
  std::int64_t first, last;
};
RowWindow conv_input_rows(const Node& node, std::int64_t kernel, std::int64_t ob, std::int64_t oe) {
  const auto pads = node.attr_ints("pads", {0, 0, 0, 0});
  const auto strides = node.attr_ints("strides", {1, 1});
  const auto dilations = node.attr_ints("dilations", {1, 1});
  const std::int64_t s = strides[0], d = dilations[0], pt = pads[0];
  return {ob * s - pt, (oe - 1) * s - pt + (kernel - 1) * d};
}

}  // namespace

bool can_shard_op(const Graph& g, const Node& node, Strategy s, int parts) {
  if (parts < 2) return false;
  const std::string& op = node.op_type;
  if (op != "Conv" && op != "Gemm" && op != "MatMul") return false;
  if (node.inputs.size() < 2 || node.outputs.size() != 1) return false;
  const std::string& x = node.inputs[0];
  if (g.is_constant(x) || !is_f32_typed(g, x) || !is_f32_typed(g, node.outputs[0])) return false;
  if (!g.is_constant(node.inputs[1]) || g.tensor(node.inputs[1]).dtype != DType::F32) return false;
  if (node.has_input(2) && (!g.is_constant(node.inputs[2]) || !is_f32_typed(g, node.inputs[2]))) {
    return false;
  }
  const Shape& xs = g.tensor(x).shape;
  const Shape& ws = g.tensor(node.inputs[1]).shape;
  const Shape& os = g.tensor(node.outputs[0]).shape;
  const auto xr = static_cast<int>(xs.size());
  if (op == "Conv") {
    if (xr != 4 || ws.size() != 4 || os.size() != 4) return false;
    if (node.attr_string("auto_pad", "NOTSET") != "NOTSET") return false;
    const bool grouped = node.attr_int("group", 1) != 1;
    switch (s) {
      case Strategy::OutChannel:
        return !grouped && ws[0] >= parts;
      case Strategy::InChannelAllReduce:
      case Strategy::InChannelReduceScatter:
        return !grouped && xs[1] >= parts;
      case Strategy::Spatial:
        return os[2] >= parts;
      default:
        return false;
    }
  }
  if (ws.size() != 2 || xr < 1) return false;
  if (op == "Gemm" && (xr != 2 || node.attr_int("transA", 0) != 0)) return false;
  const int wo = weight_out_axis(node);
  switch (s) {
    case Strategy::OutChannel:
      return ws[wo] >= parts;
    case Strategy::InChannelAllReduce:
    case Strategy::InChannelReduceScatter:
      return ws[1 - wo] >= parts;
    case Strategy::Spatial:
      return xr >= 2 && xs[xr - 2] >= parts && os.size() >= 2;
    default:
      return false;
  }
}

OpShard shard_op(const Graph& g, const Node& node, Strategy s, int part, int parts) {
  OpShard r;
  const std::string& x = node.inputs[0];
  const bool conv = node.op_type == "Conv";
  const Tensor& w = *g.tensor(node.inputs[1]).data;
  std::optional<Tensor> bias;
  if (node.has_input(2)) bias = *g.tensor(node.inputs[2]).data;
  Shape xs = g.tensor(x).shape;
  const auto xr = static_cast<int>(xs.size());
  const auto out_rank = static_cast<int>(g.tensor(node.outputs[0]).shape.size());
  Tensor wpart = w;
  Node n = node;
  const int wo = conv ? 0 : weight_out_axis(node);
  switch (s) {
    case Strategy::OutChannel: {
      const auto [b, e] = block_range(w.shape()[wo], part, parts);
      wpart = slice_axis(w, wo, b, e);
      if (bias && bias->rank() >= 1 && bias->shape().back() == w.shape()[wo]) {
        bias = slice_axis(*bias, static_cast<int>(bias->rank()) - 1, b, e);
      }
      r.out_axis = conv ? 1 : out_rank - 1;
      break;
    }
    case Strategy::InChannelAllReduce:
    case Strategy::InChannelReduceScatter: {
      const int xa = conv ? 1 : xr - 1;
      const auto [b, e] = block_range(xs[xa], part, parts);
      r.in_axis = xa, r.in_begin = b, r.in_end = e;
      xs[xa] = e - b;
      wpart = slice_axis(w, conv ? 1 : 1 - wo, b, e);
      if (part != 0 && bias) {  // the bias is added once, by part 0
        bias.reset();
        n.inputs.resize(2);
      }
      r.out_axis = -1;
      break;
    }
    case Strategy::Spatial: {
      const int xa = conv ? 2 : xr - 2;
      if (conv) {
        const Shape& os = g.tensor(node.outputs[0]).shape;
        const auto [ob, oe] = block_range(os[2], part, parts);
        const RowWindow rows = conv_input_rows(node, w.shape()[2], ob, oe);
        const std::int64_t ib = std::max<std::int64_t>(0, rows.first);
        const std::int64_t ie = std::min<std::int64_t>(xs[2], rows.last + 1);
        auto pads = node.attr_ints("pads", {0, 0, 0, 0});
        pads[0] = ib - rows.first;     // padding above this block's first row
        pads[2] = rows.last + 1 - ie;  // and below its last
        n.attributes["pads"] = pads;
        r.in_begin = ib, r.in_end = ie;
      } else {
        const auto [b, e] = block_range(xs[xa], part, parts);
        r.in_begin = b, r.in_end = e;
        if (bias && bias->rank() >= 2 && bias->shape()[bias->rank() - 2] == xs[xa] && xs[xa] > 1) {
          bias = slice_axis(*bias, static_cast<int>(bias->rank()) - 2, b, e);
        }
      }
      r.in_axis = xa;
      xs[xa] = r.in_end - r.in_begin;
      r.out_axis = conv ? 2 : out_rank - 2;
      break;
    }
    default:
      break;
  }
  Graph& sg = r.graph;
  sg.name = node.name + "_part" + std::to_string(part);
  sg.opset = g.opset;
  sg.set_type(x, DType::F32, xs);
  sg.inputs = {x};
  sg.set_constant(node.inputs[1], std::move(wpart));
  if (bias) sg.set_constant(node.inputs[2], std::move(*bias));
  sg.nodes = {n};
  sg.outputs = {node.outputs[0]};
  infer_shapes(sg);
  r.in_shape = xs;
  r.out_shape = sg.tensor(node.outputs[0]).shape;
  return r;
}

}  // namespace orchid::distributed
