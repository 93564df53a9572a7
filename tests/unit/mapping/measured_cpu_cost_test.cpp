// CPU-rank layer costs measured on the executor: alone first, then in context (rounds that
// run every layer whole after another, as the plan runner runs a model; shards scaled as
// their layer).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "cost/cost_model.hpp"
#include "cost/device_spec.hpp"
#include "mapping/layer_cost.hpp"
#include "mapping/layer_subgraph.hpp"
#include "mapping/measured_cpu_cost.hpp"
#include "mapping/sharding.hpp"
#include "mapping/system.hpp"
#include "mapping/workload_from_graph.hpp"
#include "passes/load_model.hpp"
#include "test_config_roots.hpp"

namespace orchid::mapping {
namespace {

const std::string kRoot = ORCHID_SOURCE_DIR;

TEST(MeasuredCpuCost, InContextRoundsRetimeEveryShardAndReplaceItsTimeAlone) {
  const Graph g = load_model(kRoot + "/models/tiny_conv.onnx").graph;
  const Workload w = extract_workload(g, 2, "tiny_conv");
  const System sys = load_system(kRoot + "/configs/systems/cpu2.toml");
  const Design& cpu = sys.designs[0];
  ASSERT_TRUE(cpu.is_cpu);
  const auto model = make_analytic_cost_model(load_device_spec("cpu", test::source_configs()));
  // Evicting 1 MB before each run alone (the model is tiny).
  MeasuredCpuCostProvider provider(*model, default_cost_provider(), 1e6);
  // The layers whole and split two ways by every strategy that applies, as the evaluator
  // asks for them: layer by layer.
  std::vector<std::pair<Layer, double>> asked;
  for (const Layer& l : w.layers) {
    for (Strategy s : {Strategy::None, Strategy::OutChannel, Strategy::Spatial}) {
      if (!strategy_valid(l, s, s == Strategy::None ? 1 : 2)) continue;
      const Layer shard = shard_layer(l, s, s == Strategy::None ? 1 : 2);
      const double alone = provider.compute_seconds(shard, cpu);
      ASSERT_GT(alone, 0) << l.name;
      asked.emplace_back(shard, alone);
    }
  }
  const MeasuredCpuCostStats before = provider.stats();
  ASSERT_GT(before.measured, w.layers.size());  // shards besides the whole layers
  EXPECT_EQ(before.fallbacks, 0u) << before.first_fallback;
  EXPECT_EQ(before.context_rounds, 0);

  provider.measure_in_context(nullptr, 0.05);
  const MeasuredCpuCostStats after = provider.stats();
  EXPECT_GT(after.context_rounds, 25);         // microseconds a round: rounds until 50 ms
  EXPECT_EQ(after.measured, before.measured);  // nothing timed alone again
  EXPECT_GT(after.alone_sum_s, 0);
  EXPECT_GT(after.context_sum_s, 0);
  // Whole layers now cost their times in context (one sample each adds up to the context
  // sum); each shard its time alone scaled as its layer's was. Times alone were one
  // sample's times the batch.
  double context = 0, alone = 0;
  bool changed = false;
  double layer_scale = 0;
  for (const auto& [shard, t_alone] : asked) {
    Layer one = shard;
    one.batch = 1;
    const double first = provider.compute_seconds(one, cpu);
    const double both = provider.compute_seconds(shard, cpu);  // 2 samples back to back
    ASSERT_GT(first, 0);
    EXPECT_GT(both, first);
    changed = changed || both != t_alone;
    const double first_alone = t_alone / static_cast<double>(shard.batch);
    if (shard.split == 1) {  // the whole layer, asked first
      context += first;
      alone += first_alone;
      layer_scale = first / first_alone;
    } else {
      EXPECT_NEAR(first / first_alone, layer_scale, 1e-9 * layer_scale) << shard.name;
    }
  }
  EXPECT_TRUE(changed);
  EXPECT_NEAR(context, after.context_sum_s, 1e-9 + 1e-9 * context);
  EXPECT_NEAR(alone, after.alone_sum_s, 1e-9 + 1e-9 * alone);
}

std::vector<std::string> op_types(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op_type);
  return ops;
}

TEST(MeasuredCpuCost, InContextRoundsRunEachLayerAsThePlanRunnerDoes) {
  const Graph g = load_model(kRoot + "/models/tiny_attention.onnx").graph;
  const Workload w = extract_workload(g, 1, "tiny_attention");
  ASSERT_TRUE(w.graph);
  // The query projection splits heads after its bias: the runner runs its Reshape and
  // Transpose (which moves data), the subgraph rebuilt from its dimensions has neither.
  const auto q = std::find_if(w.layers.begin(), w.layers.end(),
                              [](const Layer& l) { return l.name == "q_proj"; });
  ASSERT_NE(q, w.layers.end());
  const Graph program = layer_program(*w.graph, *q);
  EXPECT_EQ(op_types(program), (std::vector<std::string>{"MatMul", "Add", "Reshape", "Transpose"}));
  EXPECT_EQ(program.inputs, std::vector<std::string>{"ln1"});
  EXPECT_EQ(program.outputs, std::vector<std::string>{"q3"});
  const std::vector<std::string> rebuilt = op_types(layer_subgraph(*q).graph);
  EXPECT_EQ(std::count(rebuilt.begin(), rebuilt.end(), "Transpose"), 0);
  // The last layer's output is the model's.
  const Graph last = layer_program(*w.graph, w.layers.back());
  EXPECT_EQ(last.outputs, g.outputs);

  const System sys = load_system(kRoot + "/configs/systems/cpu2.toml");
  const auto model = make_analytic_cost_model(load_device_spec("cpu", test::source_configs()));
  MeasuredCpuCostProvider provider(*model, default_cost_provider(), 1e6);
  for (const Layer& l : w.layers) ASSERT_GT(provider.compute_seconds(l, sys.designs[0]), 0);
  provider.measure_in_context(w.graph.get(), 0.05);
  const MeasuredCpuCostStats st = provider.stats();
  EXPECT_GT(st.context_rounds, 0);
  EXPECT_EQ(st.runner_programs, w.layers.size());  // every layer, none rebuilt
  for (const Layer& l : w.layers) EXPECT_GT(provider.compute_seconds(l, sys.designs[0]), 0);
}

}  // namespace
}  // namespace orchid::mapping
