#include "passes/widen_half_floats.hpp"

#include "ir/op_registry.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

constexpr std::int64_t kOnnxFloat = 1, kOnnxFloat16 = 10, kOnnxBfloat16 = 16;

void widen_in_place(Graph& g) {
  std::vector<std::string> names;
  for (const auto& [name, info] : g.tensors()) {
    if (info.has_type && is_half_float(info.dtype)) names.push_back(name);
  }
  for (const auto& name : names) {
    TensorInfo& info = g.tensor(name);
    if (info.data) {
      g.set_constant(name, info.data->cast(DType::F32));  // exact: f32 holds every f16/bf16
    } else {
      info.dtype = DType::F32;
    }
  }
  for (Node& node : g.nodes) {
    if (node.op_type == "Cast") {
      const std::int64_t to = node.required_int("to");
      if (to == kOnnxFloat16 || to == kOnnxBfloat16) node.attributes["to"] = kOnnxFloat;
    }
    for (auto& [key, value] : node.attributes) {
      if (auto* t = std::get_if<Tensor>(&value); t && is_half_float(t->dtype())) {
        value = t->cast(DType::F32);  // ConstantOfShape's value, Constant's value
      }
    }
    for (auto& [key, branch] : node.subgraphs) {
      auto widened = std::make_shared<Graph>(*branch);
      widen_in_place(*widened);
      branch = std::move(widened);
    }
  }
}

}  // namespace

bool has_half_floats(const Graph& graph) {
  for (const auto& [name, info] : graph.tensors()) {
    if (info.has_type && is_half_float(info.dtype)) return true;
  }
  return false;
}

Graph widen_half_floats(const Graph& graph) {
  Graph out = graph;
  widen_in_place(out);
  // Every type again from the widened inputs, so no op keeps a 16-bit result its shape
  // function would not produce from f32 inputs.
  infer_shapes(out);
  for (const Node& node : out.nodes) {
    for (const auto& name : node.outputs) {
      if (name.empty() || !out.has_tensor(name)) continue;
      const TensorInfo& info = out.tensor(name);
      if (info.has_type && is_half_float(info.dtype)) {
        unsupported("{} still computes {} tensor '{}' after widening f16/bf16 to f32",
                    node.describe(), dtype_name(info.dtype), name);
      }
    }
  }
  return out;
}

TensorMap widen_feed(const TensorMap& feed) {
  TensorMap out;
  for (const auto& [name, value] : feed) {
    out.emplace(name, is_half_float(value.dtype()) ? value.cast(DType::F32) : value);
  }
  return out;
}

TensorMap narrow_outputs(const Graph& model, const TensorMap& outputs) {
  TensorMap out;
  for (const auto& [name, value] : outputs) {
    const DType want = model.has_tensor(name) && model.tensor(name).has_type
                           ? model.tensor(name).dtype
                           : value.dtype();
    out.emplace(name, is_half_float(want) && value.dtype() != want ? value.cast(want) : value);
  }
  return out;
}

}  // namespace orchid
