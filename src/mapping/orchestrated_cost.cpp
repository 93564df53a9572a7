// Orchestrator-backed GPU layer costs (see orchestrated_cost.hpp).
#include "mapping/orchestrated_cost.hpp"

#include <chrono>
#include <exception>

#include <fmt/format.h>

#include "cost/device_spec.hpp"
#include "mapping/layer_subgraph.hpp"
#include "orchestrate/orchestrator.hpp"

namespace orchid::mapping {

OrchestratedCostProvider::OrchestratedCostProvider(double time_limit_s)
    : time_limit_s_(time_limit_s) {}

OrchestratedCostProvider::~OrchestratedCostProvider() = default;

const CostModel* OrchestratedCostProvider::model_for(const GpuSpec& gpu, std::string& why) const {
  if (gpu.spec_path.empty()) {
    why = fmt::format("GPU '{}' has no device file (inline spec)", gpu.name);
    return nullptr;
  }
  if (auto it = models_.find(gpu.spec_path); it != models_.end()) return it->second.get();
  if (auto it = model_errors_.find(gpu.spec_path); it != model_errors_.end()) {
    why = it->second;
    return nullptr;
  }
  try {
    // spec_path is a file path the system loader resolved, so no config roots are needed.
    auto model = make_analytic_cost_model(load_device_spec(gpu.spec_path, ConfigRoots{}));
    return (models_[gpu.spec_path] = std::move(model)).get();
  } catch (const std::exception& e) {
    why = model_errors_[gpu.spec_path] = e.what();
    return nullptr;
  }
}

double OrchestratedCostProvider::compute_seconds(const Layer& layer, const Design& design) const {
  if (!design.is_gpu) return AnalyticCostProvider().compute_seconds(layer, design);
  if (!design.supports_kind(layer.kind)) return -1;
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string key =
      design.gpu.spec_path + "|" + design.gpu.name + "|" + layer_signature(layer);
  if (auto it = memo_.find(key); it != memo_.end()) {
    ++stats_.memo_hits;
    return it->second;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::string why;
  double seconds = -1;
  if (const CostModel* model = model_for(design.gpu, why)) {
    try {
      const LayerSubgraph sub = layer_subgraph(layer);
      OrchestrateOptions options;
      options.time_limit_s = time_limit_s_;
      const Orchestration o = orchestrate(sub.graph, *model, options);
      seconds = o.optimal.total_us * 1e-6 * sub.repeat;
      ++stats_.layers_orchestrated;
    } catch (const std::exception& e) {
      why = e.what();
    }
  }
  if (seconds < 0) {
    seconds = gpu_roofline_seconds(design.gpu, layer);
    ++stats_.fallbacks;
    if (stats_.fallback_notes.size() < 5) {
      stats_.fallback_notes.push_back(
          fmt::format("{} ({}): {}", layer.name, kind_name(layer.kind), why));
    }
  }
  stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  memo_[key] = seconds;
  return seconds;
}

OrchestratedCostStats OrchestratedCostProvider::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace orchid::mapping
