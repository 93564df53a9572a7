// The MPI-free parts of distributed execution: alpha-beta fits, the system file update,
// tensor slicing for sharded layers, and reading mapping plans.
#include <gtest/gtest.h>

#include <cmath>

#include "distributed/mapping_plan.hpp"
#include "distributed/network_fit.hpp"
#include "distributed/tensor_slices.hpp"
#include "error_message.hpp"
#include "mapping/cpu_cluster_cost.hpp"
#include "mapping/evaluator.hpp"
#include "mapping/system.hpp"

namespace orchid::distributed {
namespace {

using orchid::testing::error_of;

TEST(DistributedNetworkFit, RecoversLatencyAndBandwidth) {
  std::vector<Sample> s;
  for (double bytes : {8.0, 1e3, 1e5, 1e7}) s.push_back({bytes, 5e-6 + bytes / 2e9});
  const AlphaBeta f = fit_alpha_beta(s, "t");
  EXPECT_NEAR(f.latency_us, 5, 1e-6);
  EXPECT_NEAR(f.gbs, 2, 1e-9);
  EXPECT_NEAR(f.rms_relative_error, 0, 1e-9);
  EXPECT_NE(error_of([] {
              fit_alpha_beta({{8, 1e-3}, {16, 1e-4}}, "shrinking");
            }).find("shrinking"),
            std::string::npos);
}

// Figures of two ranks: point-to-point 3 us + 4.5 GB/s, every collective 10 us + 2 GB/s.
NetworkFigures two_rank_figures() {
  NetworkFigures f;
  f.ranks = 2;
  f.p2p = {3, 4.5, 0.01};
  f.allreduce = f.allgather = f.reduce_scatter = {10, 2, 0.02};
  return f;
}

TEST(DistributedNetworkFit, WritesBandwidthsTheSystemLoaderReads) {
  const NetworkFigures f = two_rank_figures();
  const std::string text = "# my cluster\nname = \"c\"\n\n[devices.cpu]\nranks = 2\nthreads = 1\n";
  const std::string out = with_network_figures(text, "c.toml", f);
  EXPECT_EQ(out.rfind("# my cluster\n", 0), 0u) << out;
  const mapping::System sys =
      mapping::parse_system(out, std::string(ORCHID_SOURCE_DIR) + "/configs/systems/c.toml");
  EXPECT_EQ(sys.cpu_ranks, 2);
  EXPECT_DOUBLE_EQ(sys.intra_group_gbs, 4.5);
  EXPECT_TRUE(sys.designs[0].is_cpu);
  EXPECT_NE(out.find("[network.allreduce]"), std::string::npos) << out;
  // Calibrating again keeps the header as it was: one note, not one per run.
  const std::string again = with_network_figures(out, "c.toml", f);
  EXPECT_EQ(again, out);
}

// The runner's figures measured by calibrate-net are read back: its step per layer is
// charged once per layer a group runs, on top of its computation, and its rate for split
// layers' messages prices them; a negative step is refused by key.
TEST(DistributedNetworkFit, RunnerStepIsChargedPerLayer) {
  NetworkFigures f = two_rank_figures();
  const std::string text = "name = \"c\"\n\n[devices.cpu]\nranks = 2\nthreads = 1\n";
  const std::string at = std::string(ORCHID_SOURCE_DIR) + "/configs/systems/c.toml";
  const std::string without = with_network_figures(text, "c.toml", f);
  EXPECT_EQ(without.find("[network.runner]"), std::string::npos) << without;
  f.runner_step_us = 0.25;
  f.runner_gbs = 1.5;
  const std::string with = with_network_figures(text, "c.toml", f);
  const mapping::System a = mapping::parse_system(without, at);
  const mapping::System b = mapping::parse_system(with, at);
  EXPECT_DOUBLE_EQ(a.cpu_network.step_s, 0);
  EXPECT_DOUBLE_EQ(b.cpu_network.step_s, 0.25e-6);
  // The runner's own rate for split layers' messages replaces the point-to-point fit's.
  EXPECT_DOUBLE_EQ(a.cpu_network.gbs, 4.5);
  EXPECT_DOUBLE_EQ(b.cpu_network.gbs, 1.5);
  mapping::Workload w;
  w.name = "one";
  mapping::Layer l;
  l.name = "fc";
  l.kind = mapping::LayerKind::Fc;
  l.m = l.n = 64;
  w.layers.push_back(l);
  w.link();
  const mapping::Evaluator ea(w, a), eb(w, b);
  for (int p : {1, 2}) {
    const mapping::Strategy s = p == 1 ? mapping::Strategy::None : mapping::Strategy::OutChannel;
    EXPECT_NEAR(eb.compute_seconds(0, 0, p, s) - ea.compute_seconds(0, 0, p, s), 0.25e-6, 1e-15)
        << p;
  }
  std::string bad = with;
  bad.replace(bad.find("step_us = 0.25"), 14, "step_us = -1.0");
  EXPECT_NE(error_of([&] { mapping::parse_system(bad, at); }).find("'step_us'"), std::string::npos)
      << error_of([&] { mapping::parse_system(bad, at); });
}

// The runner's fixed time per split layer is read back and charged once per sample to
// every layer split by channels or rows, never to whole or batch layers; a negative one
// is refused by key.
TEST(DistributedNetworkFit, RunnerSplitTimeIsChargedPerSplitLayerAndSample) {
  NetworkFigures f = two_rank_figures();
  f.runner_step_us = 0.25;
  f.runner_gbs = 1.5;
  const std::string text = "name = \"c\"\n\n[devices.cpu]\nranks = 2\nthreads = 1\n";
  const std::string at = std::string(ORCHID_SOURCE_DIR) + "/configs/systems/c.toml";
  const mapping::System a = mapping::parse_system(with_network_figures(text, "c.toml", f), at);
  f.runner_split_us = 3;
  const std::string with = with_network_figures(text, "c.toml", f);
  const mapping::System b = mapping::parse_system(with, at);
  EXPECT_DOUBLE_EQ(a.cpu_network.split_s, 0);
  EXPECT_DOUBLE_EQ(b.cpu_network.split_s, 3e-6);
  mapping::Layer l;
  l.name = "fc";
  l.kind = mapping::LayerKind::Fc;
  l.m = l.n = 64;
  l.k = 8;
  l.batch = 2;
  using mapping::Strategy;
  for (Strategy s : {Strategy::OutChannel, Strategy::InChannelAllReduce, Strategy::Spatial}) {
    EXPECT_NEAR(mapping::cpu_layer_comm_seconds(l, s, 2, b.cpu_network) -
                    mapping::cpu_layer_comm_seconds(l, s, 2, a.cpu_network),
                2 * 3e-6, 1e-15)
        << mapping::strategy_name(s);
  }
  for (auto [s, p] : {std::pair{Strategy::Batch, 2}, std::pair{Strategy::None, 2},
                      std::pair{Strategy::OutChannel, 1}}) {
    EXPECT_DOUBLE_EQ(mapping::cpu_layer_comm_seconds(l, s, p, b.cpu_network),
                     mapping::cpu_layer_comm_seconds(l, s, p, a.cpu_network))
        << mapping::strategy_name(s) << " on " << p;
  }
  std::string bad = with;
  bad.replace(bad.find("split_us = 3"), 12, "split_us = -3");
  EXPECT_NE(error_of([&] { mapping::parse_system(bad, at); }).find("'split_us'"), std::string::npos)
      << error_of([&] { mapping::parse_system(bad, at); });
}

TEST(DistributedTensorSlices, SliceConcatRoundTripAndSum) {
  std::vector<float> v(2 * 5 * 3);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  const Tensor t = Tensor::from_vector<float>({2, 5, 3}, v);
  for (int axis = 0; axis < 3; ++axis) {
    std::vector<Tensor> parts;
    for (int p = 0; p < 3; ++p) {
      const auto [b, e] = block_range(t.shape()[axis], p, 3);
      parts.push_back(slice_axis(t, axis, b, e));
    }
    EXPECT_TRUE(concat_axis(parts, axis) == t) << axis;
  }
  EXPECT_EQ(block_range(5, 0, 3), (std::pair<std::int64_t, std::int64_t>{0, 2}));
  EXPECT_EQ(block_range(5, 2, 3), (std::pair<std::int64_t, std::int64_t>{4, 5}));
  EXPECT_EQ(block_range(1, 1, 2).first, block_range(1, 1, 2).second);  // empty block
  const Tensor s = sum_f32({t, t, t});
  EXPECT_FLOAT_EQ(s.data<float>()[7], 21.0f);
}

TEST(DistributedMappingPlan, ErrorsNameFileAndKey) {
  const std::string good =
      R"({"workload":"m","system":"cpu2","batch":2,"latency_s":0.1,
          "groups":[{"design":"cpu","devices":2,"first_device":0}],
          "layers":[{"name":"a","group":0,"sharding":"out-ch","start_s":0,"finish_s":1}]})";
  const MappingPlan p = parse_mapping_plan(good, "p.json");
  EXPECT_EQ(p.devices(), 2);
  EXPECT_EQ(p.layers[0].sharding, mapping::Strategy::OutChannel);
  std::string bad = good;
  bad.replace(bad.find("out-ch"), 6, "diagonal");
  const std::string msg = error_of([&] { parse_mapping_plan(bad, "p.json"); });
  EXPECT_NE(msg.find("p.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'sharding'"), std::string::npos) << msg;
  bad = good;
  bad.replace(bad.find("\"group\":0"), 9, "\"group\":3");
  EXPECT_NE(error_of([&] { parse_mapping_plan(bad, "p.json"); }).find("'group'"),
            std::string::npos);
}

}  // namespace
}  // namespace orchid::distributed
