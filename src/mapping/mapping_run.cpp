#include "mapping/mapping_run.hpp"

#include <nlohmann/json.hpp>

#include "cost/device_spec.hpp"
#include "mapping/plan_json.hpp"

namespace orchid::mapping {

MappingRun::MappingRun(const MappingRequest& request, const ConfigRoots& roots)
    : request_(request),
      workload_(load_workload(request.workload, request.batch, roots, request.import)),
      system_(request.system_text.empty()
                  ? load_system(find_system(request.system, roots), roots)
                  : parse_system(request.system_text, request.system, roots)) {
  orchestrate_gpus_ = !system_.gpu_designs.empty() && !request.gpu_roofline;
  const LayerCostProvider& others = orchestrate_gpus_
                                        ? static_cast<const LayerCostProvider&>(orchestrated_)
                                        : default_cost_provider();
  if (system_.cpu_ranks > 0) {
    cpu_model_ = make_analytic_cost_model(load_device_spec("cpu", roots));
    double model_bytes = 0;  // one inference's weights and activations (f32)
    for (const Layer& l : workload_.layers) {
      model_bytes +=
          4 * (l.weight_elements() +
               l.output_elements() / static_cast<double>(std::max<std::int64_t>(1, l.batch)));
    }
    measured_ = std::make_unique<MeasuredCpuCostProvider>(*cpu_model_, others, model_bytes);
  }
  evaluator_ = std::make_unique<Evaluator>(
      workload_, system_, measured_ ? static_cast<const LayerCostProvider&>(*measured_) : others);
  if (measured_) {
    // The first pricing timed every shard alone; the second times them in context, one
    // after another as the runner runs layers, and the table is priced again from the memo.
    measured_->measure_in_context(workload_.graph.get());
    evaluator_ = std::make_unique<Evaluator>(workload_, system_, *measured_);
  }
}

void MappingRun::search(const ProgressFn& progress) {
  SearchOptions so = request_.search;
  const H2HResult h2h = h2h_baseline(*evaluator_);
  baselines_ = {h2h.result, data_parallel_baseline(*evaluator_), greedy_baseline(*evaluator_)};
  std::vector<std::string> seed_names;
  for (const BaselineResult& b : baselines_) {
    if (!b.available) continue;
    so.seed_mappings.push_back(b.mapping);
    seed_names.push_back(b.name);
  }
  result_ = genetic_search(*evaluator_, so, progress);
  schedule_ = evaluator_->schedule(result_.mapping);
  winning_seed_ = result_.from_seed_mapping >= 0 ? seed_names[result_.from_seed_mapping] : "";
}

std::string MappingRun::to_json() const {
  nlohmann::json j = nlohmann::json::parse(plan_to_json(
      *evaluator_, result_.mapping, schedule_, baselines_, lower_bound(), result_.seconds));
  // How the layers were priced, which the plan's figures rest on.
  nlohmann::json costing = {{"gpu", orchestrate_gpus_             ? "orchestrator"
                                    : system_.gpu_designs.empty() ? "none"
                                                                  : "roofline"}};
  if (orchestrate_gpus_) {
    const OrchestratedCostStats st = orchestrated_.stats();
    costing["gpu_layers_orchestrated"] = st.layers_orchestrated;
    costing["gpu_memo_hits"] = st.memo_hits;
    costing["gpu_fallbacks"] = st.fallbacks;
    costing["gpu_seconds"] = st.seconds;
  }
  if (measured_) {
    const MeasuredCpuCostStats st = measured_->stats();
    costing["cpu_layers_measured"] = st.measured;
    costing["cpu_context_rounds"] = st.context_rounds;
    costing["cpu_runner_programs"] = st.runner_programs;
    costing["cpu_context_ratio"] = st.alone_sum_s > 0 ? st.context_sum_s / st.alone_sum_s : 0.0;
    costing["cpu_memo_hits"] = st.memo_hits;
    costing["cpu_fallbacks"] = st.fallbacks;
    costing["cpu_seconds"] = st.seconds;
  }
  j["costing"] = costing;
  return j.dump(2) + "\n";
}

}  // namespace orchid::mapping
