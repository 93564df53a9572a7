// The MPI-free parts of distributed execution: alpha-beta fits, the system file update,
// tensor slicing for sharded layers, and reading mapping plans.
#include <gtest/gtest.h>

#include <cmath>

#include "distributed/mapping_plan.hpp"
#include "distributed/network_fit.hpp"
#include "distributed/tensor_slices.hpp"
#include "error_message.hpp"
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

TEST(DistributedNetworkFit, WritesBandwidthsTheSystemLoaderReads) {
  NetworkFigures f;
  f.ranks = 2;
  f.p2p = {3, 4.5, 0.01};
  f.allreduce = f.allgather = f.reduce_scatter = {10, 2, 0.02};
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
