#include "passes/model_summary.hpp"

#include "ir/graph_stats.hpp"

namespace orchid {

namespace {

nlohmann::json describe_tensor(const Graph& g, const std::string& name) {
  const TensorInfo& info = g.tensor(name);
  nlohmann::json t = {{"name", name}, {"dynamic", info.dynamic}};
  // A dynamic tensor's type is decided per run by the reference interpreter.
  t["dtype"] =
      info.dynamic ? nlohmann::json() : nlohmann::json(std::string(dtype_name(info.dtype)));
  t["shape"] = info.dynamic ? nlohmann::json() : nlohmann::json(info.shape);
  return t;
}

nlohmann::json metadata_or_null(const Graph& g, const char* key) {
  auto it = g.metadata.find(key);
  return it == g.metadata.end() ? nlohmann::json() : nlohmann::json(it->second);
}

}  // namespace

nlohmann::json model_summary(const LoadedModel& loaded, const std::string& model_path) {
  const Graph& g = loaded.graph;
  const GraphStats stats = compute_graph_stats(g);
  nlohmann::json j;
  j["model"] = model_path;
  j["producer"] = metadata_or_null(g, "onnx.producer");
  j["source_opset"] = metadata_or_null(g, "onnx.opset");
  j["weights_regenerated"] = g.metadata.count("orchid.weights") > 0;
  j["inputs"] = nlohmann::json::array();
  for (const auto& in : g.inputs) j["inputs"].push_back(describe_tensor(g, in));
  j["outputs"] = nlohmann::json::array();
  for (const auto& out : g.outputs) j["outputs"].push_back(describe_tensor(g, out));
  j["nodes"] = stats.nodes;
  j["imported_nodes"] = loaded.stats.nodes_before;
  j["folded_nodes"] = loaded.stats.folded_nodes;
  j["dead_nodes"] = loaded.stats.dead_nodes;
  j["inlined_branches"] = loaded.stats.inlined_branches;
  j["dynamic_nodes"] = loaded.stats.dynamic_nodes;
  const Node* first = g.first_dynamic_node();
  j["first_dynamic_node"] = first ? nlohmann::json(first->describe()) : nlohmann::json();
  j["tensors"] = stats.tensors;
  j["parameters"] = stats.parameters;
  j["parameter_bytes"] = stats.parameter_bytes;
  j["flops"] = stats.flops;
  j["op_histogram"] = stats.op_histogram;
  return j;
}

}  // namespace orchid
