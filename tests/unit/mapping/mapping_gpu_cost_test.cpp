// Orchestrator-backed GPU layer costs: a layer's cost is the orchestrator's optimal plan
// for its subgraph, bounded by the device's tensor-core peak and by the unfused plan.
#include <gtest/gtest.h>

#include "cost/cost_model.hpp"
#include "cost/device_spec.hpp"
#include "mapping/baselines.hpp"
#include "mapping/genetic_search.hpp"
#include "mapping/layer_subgraph.hpp"
#include "mapping/orchestrated_cost.hpp"
#include "mapping/system.hpp"
#include "orchestrate/orchestrator.hpp"
#include "test_config_roots.hpp"

namespace orchid::mapping {
namespace {

const std::string kRoot = ORCHID_SOURCE_DIR;

Design a100_design() {
  const System sys = load_system(kRoot + "/configs/systems/fpga4_gpu.toml");
  const int d = sys.design_index("gpu:a100");
  EXPECT_GE(d, 0);
  return sys.designs[d];
}

Layer conv_layer(std::int64_t batch) {
  Layer l;
  l.name = "conv";
  l.kind = LayerKind::Conv;
  l.m = 128, l.n = 64, l.r = 56, l.c = 56, l.k = 3, l.s = 1, l.p = 1;
  l.batch = batch;
  return l;
}

TEST(MappingGpuCost, ConvLayerCostIsTheOrchestratorsOptimalPlan) {
  const Design gpu = a100_design();
  const Layer l = conv_layer(4);
  const OrchestratedCostProvider provider;
  const double t = provider.compute_seconds(l, gpu);

  // The same subgraph orchestrated directly.
  const LayerSubgraph sub = layer_subgraph(l);
  ASSERT_EQ(sub.graph.nodes.size(), 2u);  // Conv (with bias) + ReLU
  const DeviceSpec spec = load_device_spec("a100", test::source_configs());
  const auto model = make_analytic_cost_model(spec);
  const Orchestration o = orchestrate(sub.graph, *model);
  EXPECT_DOUBLE_EQ(t, o.optimal.total_us * 1e-6);
  // Fusing ReLU into the conv never costs more than running them as two kernels.
  EXPECT_LE(t, o.operator_level.total_us * 1e-6 + 1e-15);
  // At least one launch, and no faster than the tensor-core peak allows ...
  EXPECT_GE(t, spec.launch_overhead_us * 1e-6);
  EXPECT_GE(t, l.ops() / (spec.peak_tf32_gflops * 1e9));
  // ... but faster than the FP32 roofline for this compute-bound conv (tensor cores).
  EXPECT_LT(t, gpu_roofline_seconds(gpu.gpu, l));
  // Twice the batch costs more, and less than twice plus a launch.
  const double t8 = provider.compute_seconds(conv_layer(8), gpu);
  EXPECT_GT(t8, t);
  EXPECT_LE(t8, 2 * t + spec.launch_overhead_us * 1e-6);

  // Memoised by signature: the same layer again is not orchestrated again.
  EXPECT_DOUBLE_EQ(provider.compute_seconds(conv_layer(4), gpu), t);
  const OrchestratedCostStats st = provider.stats();
  EXPECT_EQ(st.layers_orchestrated, 2u);
  EXPECT_EQ(st.memo_hits, 1u);
  EXPECT_EQ(st.fallbacks, 0u);
}

TEST(MappingGpuCost, FpgaDesignsKeepTheAnalyticModel) {
  const System sys = load_system(kRoot + "/configs/systems/fpga4_gpu.toml");
  const Design& fpga = sys.designs[sys.design_index("cnn_acc_7")];
  const OrchestratedCostProvider provider;
  EXPECT_DOUBLE_EQ(provider.compute_seconds(conv_layer(2), fpga),
                   AnalyticCostProvider().compute_seconds(conv_layer(2), fpga));
  EXPECT_EQ(provider.stats().layers_orchestrated, 0u);
}

TEST(MappingGpuCost, InlineGpuSpecFallsBackToTheRooflineAndIsCounted) {
  Design gpu = a100_design();
  gpu.gpu.spec_path.clear();  // as for a GPU described inline in a system file
  const OrchestratedCostProvider provider;
  const Layer l = conv_layer(2);
  EXPECT_DOUBLE_EQ(provider.compute_seconds(l, gpu), gpu_roofline_seconds(gpu.gpu, l));
  const OrchestratedCostStats st = provider.stats();
  EXPECT_EQ(st.fallbacks, 1u);
  ASSERT_EQ(st.fallback_notes.size(), 1u);
  EXPECT_NE(st.fallback_notes[0].find("inline"), std::string::npos);
}

TEST(MappingGpuCost, EveryResNetAndBertLayerAndShardOrchestratesWithoutFallback) {
  const System sys = load_system(kRoot + "/configs/systems/fpga4_gpu.toml");
  const OrchestratedCostProvider provider;
  for (const char* name : {"resnet50", "bert_base"}) {
    const Workload w = load_workload(name, 2, test::source_configs());
    const Evaluator ev(w, sys, provider);
    const int gpu = sys.design_index("gpu:a100");
    for (std::size_t l = 0; l < w.layers.size(); ++l) {
      ASSERT_TRUE(w.layers[l].recipe) << w.layers[l].name;
      EXPECT_GT(ev.compute_seconds(static_cast<int>(l), gpu, 1, Strategy::None), 0)
          << name << " " << w.layers[l].name;
      // Sharded copies of a cheap layer rebuild their shapes too.
      const Layer half = shard_layer(w.layers[l], Strategy::OutChannel, 2);
      if (strategy_valid(w.layers[l], Strategy::OutChannel, 2)) {
        EXPECT_GT(provider.compute_seconds(half, sys.designs[gpu]), 0);
      }
    }
  }
  const OrchestratedCostStats st = provider.stats();
  EXPECT_EQ(st.fallbacks, 0u) << (st.fallback_notes.empty() ? "" : st.fallback_notes[0]);
  EXPECT_GT(st.memo_hits, st.layers_orchestrated);  // repeated blocks are priced once
}

TEST(MappingSearch, NeverWorseThanTheMappingsItIsSeededWith) {
  const System sys = load_system(kRoot + "/configs/systems/fpga8.toml");
  const Workload w = load_workload("mmmt_case1", 1, test::source_configs());
  const Evaluator ev(w, sys);
  SearchOptions o;
  o.population = 6;
  o.generations = 1;
  o.inner_population = 4;
  o.inner_generations = 1;
  o.local_search = false;
  const BaselineResult h2h = h2h_baseline(ev).result;
  const BaselineResult greedy = greedy_baseline(ev);
  o.seed_mappings = {h2h.mapping, greedy.mapping};
  const SearchResult r = genetic_search(ev, o);
  EXPECT_LE(r.latency, h2h.latency);
  EXPECT_LE(r.latency, greedy.latency);
  EXPECT_DOUBLE_EQ(ev.makespan(r.mapping), r.latency);
  // Local search only ever improves the GA's result.
  o.local_search = true;
  o.seed_mappings.clear();
  SearchOptions plain = o;
  plain.local_search = false;
  const SearchResult a = genetic_search(ev, plain);
  const SearchResult b = genetic_search(ev, o);
  EXPECT_LE(b.latency, a.latency);
  EXPECT_DOUBLE_EQ(ev.makespan(b.mapping), b.latency);
}

}  // namespace
}  // namespace orchid::mapping
