// The layer DAG's ordering, and where a workload named on the command line comes from.
#include "mapping/workload.hpp"

#include <algorithm>
#include <filesystem>

#include "ir/topological_sort.hpp"
#include "mapping/case_file.hpp"
#include "mapping/workload_from_graph.hpp"
#include "passes/load_model.hpp"
#include "util/error.hpp"

namespace orchid::mapping {

void Workload::link() {
  const int n = static_cast<int>(layers.size());
  std::vector<std::vector<std::size_t>> succ(n);
  for (int i = 0; i < n; ++i) {
    for (int p : layers[i].preds) {
      if (p < 0 || p >= n || p == i)
        fail("workload {}: layer '{}' has a bad predecessor", name, layers[i].name);
      succ[p].push_back(i);
    }
  }
  const std::vector<std::size_t> order = stable_topological_order(succ);
  if (static_cast<int>(order.size()) != n) fail("workload {}: the layer graph has a cycle", name);
  std::vector<int> position(n);
  for (int i = 0; i < n; ++i) position[order[i]] = i;
  std::vector<Layer> sorted;
  sorted.reserve(n);
  for (std::size_t i : order) sorted.push_back(std::move(layers[i]));
  for (Layer& l : sorted) {
    for (int& p : l.preds) p = position[p];
    std::sort(l.preds.begin(), l.preds.end());
    l.preds.erase(std::unique(l.preds.begin(), l.preds.end()), l.preds.end());
    l.succs.clear();
  }
  layers = std::move(sorted);
  for (int i = 0; i < n; ++i) {
    for (int p : layers[i].preds) layers[p].succs.push_back(i);
  }
}

Workload load_workload(const std::string& spec, std::int64_t batch, const ConfigRoots& roots,
                       const ImportOptions& import) {
  if (batch < 1) fail("--batch must be at least 1, got {}", batch);
  namespace fs = std::filesystem;
  auto from_onnx = [&](const std::string& path) {
    LoadedModel model = load_model(path, import);
    return extract_workload(model.graph, batch, fs::path(path).stem().string());
  };
  auto from_case = [&](const std::string& path) {
    if (!import.input_shapes.empty() || !import.dim_params.empty()) {
      fail("'{}' is a case file; input shapes and symbolic dims apply to .onnx workloads", path);
    }
    return load_case_file(path, batch);
  };
  if (spec.size() > 5 && spec.ends_with(".onnx")) return from_onnx(spec);
  if (spec.ends_with(".toml")) return from_case(spec);
  if (const auto as_case = roots.find(fs::path("workloads") / (spec + ".toml"))) {
    return from_case(as_case->string());
  }
  // The zoo's models sit beside the configs folder in the source tree and the install.
  for (const auto& root : roots.roots()) {
    const fs::path as_model = root.parent_path() / "models" / (spec + ".onnx");
    std::error_code ec;
    if (fs::is_regular_file(as_model, ec)) return from_onnx(as_model.string());
  }
  fail(
      "unknown workload '{}': not an .onnx/.toml file, not workloads/{}.toml in the config "
      "roots ({}), not models/{}.onnx beside them",
      spec, spec, roots.describe(), spec);
}

}  // namespace orchid::mapping
