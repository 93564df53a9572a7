#include "onnx/onnx_writer.hpp"

#include <algorithm>
#include <set>

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "onnx/attribute_proto.hpp"
#include "onnx/proto_io.hpp"
#include "onnx/tensor_proto.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

constexpr std::int64_t kIrVersion = 8;  // the newest libonnx 1.12's checker accepts
constexpr std::int64_t kOpset = 17;

void set_type(const TensorInfo& info, onnx::ValueInfoProto& vi) {
  vi.set_name(info.name);
  if (!info.has_type) return;
  auto& t = *vi.mutable_type()->mutable_tensor_type();
  t.set_elem_type(dtype_to_onnx(info.dtype));
  auto& shape = *t.mutable_shape();
  for (auto d : info.shape) shape.add_dim()->set_dim_value(d);
}

// Graph outputs must carry a type for the ONNX checker. Before orchid's shape inference
// has run they may not, so ask ONNX's own shape inference (on a copy, so value_info keeps
// only what orchid knows) and take just the output types from it.
void fill_missing_output_types(onnx::ModelProto& model) {
  auto& outputs = *model.mutable_graph()->mutable_output();
  const bool missing = std::any_of(outputs.begin(), outputs.end(),
                                   [](const onnx::ValueInfoProto& vi) { return !vi.has_type(); });
  if (!missing) return;
  onnx::ModelProto inferred = model;
  try {
    // Data propagation resolves shapes computed by Shape nodes (old-Softmax rewrite).
    onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception&) {
    return;  // best effort: the file stays loadable, only the checker would complain
  }
  for (int i = 0; i < outputs.size(); ++i) {
    const auto& vi = inferred.graph().output(i);
    if (!outputs[i].has_type() && vi.has_type()) *outputs[i].mutable_type() = vi.type();
  }
}

}  // namespace

void write_onnx(const Graph& graph, const std::string& path) {
  onnx::ModelProto model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name("orchid");
  model.set_producer_version(ORCHID_VERSION);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  for (const auto& [key, value] : graph.metadata) {
    auto* p = model.add_metadata_props();
    p->set_key(key);
    p->set_value(value);
  }

  // Primitive graphs and kernels are what gets written: static, without control flow.
  graph.require_static_shapes(fmt::format("writing '{}'", path));
  onnx::GraphProto& g = *model.mutable_graph();
  g.set_name(graph.name.empty() ? "main" : graph.name);

  // Constants sorted by name so the output is deterministic.
  std::vector<std::string> constants;
  for (const auto& [name, info] : graph.tensors()) {
    if (info.is_constant()) constants.push_back(name);
  }
  std::sort(constants.begin(), constants.end());
  for (const auto& name : constants) {
    auto* init = g.add_initializer();
    init->set_name(name);
    tensor_to_proto(*graph.tensor(name).data, *init);
  }

  for (const auto& in : graph.inputs) set_type(graph.tensor(in), *g.add_input());
  for (const auto& out : graph.outputs) {
    if (graph.has_tensor(out)) {
      set_type(graph.tensor(out), *g.add_output());
    } else {
      g.add_output()->set_name(out);
    }
  }

  std::set<std::string> listed(graph.inputs.begin(), graph.inputs.end());
  listed.insert(graph.outputs.begin(), graph.outputs.end());
  listed.insert(constants.begin(), constants.end());
  for (const Node& node : graph.nodes) {
    auto* n = g.add_node();
    n->set_name(node.name);
    n->set_op_type(node.op_type);
    if (!node.domain.empty() && node.domain != "ai.onnx") n->set_domain(node.domain);
    for (const auto& in : node.inputs) n->add_input(in);
    for (const auto& out : node.outputs) n->add_output(out);
    for (const auto& [key, value] : node.attributes) {
      attribute_to_proto(key, value, *n->add_attribute());
    }
    for (const auto& out : node.outputs) {
      if (out.empty() || listed.count(out) || !graph.has_tensor(out)) continue;
      if (graph.tensor(out).has_type) set_type(graph.tensor(out), *g.add_value_info());
      listed.insert(out);
    }
  }
  fill_missing_output_types(model);
  save_model_proto(model, path);
}

}  // namespace orchid
