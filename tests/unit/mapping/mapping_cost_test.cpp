// Per-layer cost formulas and ring collectives on hand-computed cases.
#include <gtest/gtest.h>

#include "mapping/layer_cost.hpp"
#include "mapping/sharding.hpp"
#include "mapping/system.hpp"

namespace orchid::mapping {
namespace {

Design h2h_acc() {
  const auto lib =
      load_design_library(std::string(ORCHID_SOURCE_DIR) + "/configs/designs/fpga_library.toml");
  for (const Design& d : lib) {
    if (d.id == "cnn_acc_1") return d;
  }
  ADD_FAILURE() << "cnn_acc_1 missing";
  return {};
}

TEST(MappingCost, ConvTileModelMatchesHandComputation) {
  const Design d = h2h_acc();  // Tm 64, Tn 7, Tr = Tc = 13, 512 bit at 100 MHz, 61.62 GOP/s
  const double bw = 512 * 100e6;
  const double t_w = 64 * 7 * 9 * 32 / bw;
  const double t_i = 7 * 13 * 13 * 32 / bw;
  const double t_o = 64 * 13 * 13 * 32 / bw;
  const double t_c = 2.0 * 13 * 13 * 64 * 7 * 9 / 1e9 / 61.62;
  // M1L1 of H2H's example: M 64, N 3, R = C = 112, K 3 -> 9 x 9 x 1 tiles, 1 input step.
  EXPECT_DOUBLE_EQ(conv_core_seconds(d, 64, 3, 112, 112, 3), 81 * (t_w + t_i + t_c + t_o));
  // N = 64 needs ceil(64 / 7) = 10 input steps per tile.
  EXPECT_DOUBLE_EQ(conv_core_seconds(d, 64, 64, 56, 56, 3), 25 * (10 * (t_w + t_i + t_c) + t_o));
}

TEST(MappingCost, HostTransfersFollowH2H) {
  const Design d = h2h_acc();
  Layer l;
  l.kind = LayerKind::Conv;
  l.m = 64, l.n = 3, l.r = 112, l.c = 112, l.k = 3;
  const double bits = 1.25e9 * 8;
  EXPECT_DOUBLE_EQ(host_transfer_seconds(d, l, {}, 1.25),
                   (64.0 * 3 * 9 + 3.0 * 224 * 224 + 64.0 * 112 * 112) * 32 / bits);
  EXPECT_DOUBLE_EQ(host_transfer_seconds(d, l, {false, false, true}, 1.25),
                   64.0 * 112 * 112 * 32 / bits);
  EXPECT_DOUBLE_EQ(host_transfer_seconds(d, l, {false, false, false}, 1.25), 0.0);
}

TEST(MappingCost, FcAndLstmModels) {
  Design d;
  d.port_bits = 512;
  d.freq_mhz = 100;
  d.dtype_bits = 32;
  d.throughput_gops = 100;
  const double bw = 512 * 100e6;
  // max(t_w + t_i, 2MNK/Th, t_o): weight streaming dominates for K = 1.
  const double fc = (1000.0 * 500 + 500 * 1) * 32 / bw;
  EXPECT_DOUBLE_EQ(fc_core_seconds(d, 1000, 500, 1), std::max(fc, 2.0 * 1000 * 500 / 1e11));
  // Iter x max(t_in, (8HD + 8H^2)/Th, t_out).
  const double step = (8.0 * 256 * 128 + 8.0 * 256 * 256) / 1e9 / 100;
  EXPECT_DOUBLE_EQ(lstm_core_seconds(d, 256, 128, 10), 10 * step);
}

TEST(MappingCost, GpuRooflineFromInlineSpec) {
  GpuSpec g{"test", 1000, 10000, 5, 16, ""};
  Layer l;
  l.kind = LayerKind::Fc;
  l.m = 1024, l.n = 1024, l.k = 1;
  const double bytes = 4.0 * (1024.0 * 1024 + 1024 + 1024);
  EXPECT_DOUBLE_EQ(gpu_roofline_seconds(g, l),
                   5e-6 + std::max(2.0 * 1024 * 1024 / 1e13, bytes / 1e12));
  Design d;
  d.is_gpu = true;
  d.gpu = g;
  d.supports = 31;
  EXPECT_DOUBLE_EQ(default_cost_provider().compute_seconds(l, d), gpu_roofline_seconds(g, l));
}

TEST(MappingCollectives, RingFormulasForOneTwoFourEightDevices) {
  const double bytes = 1e9, bw = 10;  // 0.1 s to move the tensor once
  for (int p : {1, 2, 4, 8}) {
    const double f = (p - 1.0) / p;
    EXPECT_DOUBLE_EQ(ring_all_reduce_seconds(bytes, p, bw), 2 * f * 0.1) << p;
    EXPECT_DOUBLE_EQ(ring_reduce_scatter_seconds(bytes, p, bw), f * 0.1) << p;
    EXPECT_DOUBLE_EQ(ring_all_gather_seconds(bytes, p, bw), f * 0.1) << p;
    EXPECT_DOUBLE_EQ(all_to_all_seconds(bytes, p, bw), f / p * 0.1) << p;
    EXPECT_DOUBLE_EQ(reshard_seconds(Layout::SplitBatch, Layout::Replicated, bytes, p, bw),
                     f * 0.1);
    EXPECT_DOUBLE_EQ(reshard_seconds(Layout::Replicated, Layout::SplitChannel, bytes, p, bw), 0);
    EXPECT_DOUBLE_EQ(reshard_seconds(Layout::SplitBatch, Layout::SplitChannel, bytes, p, bw),
                     f / p * 0.1);
  }
}

TEST(MappingSharding, ShardsAndWeights) {
  Layer l;
  l.kind = LayerKind::Conv;
  l.m = 64, l.n = 32, l.r = 28, l.c = 28, l.k = 3, l.batch = 4;
  EXPECT_EQ(shard_layer(l, Strategy::Batch, 4).batch, 1);
  EXPECT_EQ(shard_layer(l, Strategy::OutChannel, 4).m, 16);
  EXPECT_EQ(shard_layer(l, Strategy::InChannelAllReduce, 4).n, 8);
  EXPECT_EQ(shard_layer(l, Strategy::Spatial, 4).r, 7);
  EXPECT_DOUBLE_EQ(shard_weight_elements(l, Strategy::OutChannel, 4), 64.0 * 32 * 9 / 4);
  EXPECT_DOUBLE_EQ(shard_weight_elements(l, Strategy::Batch, 4), 64.0 * 32 * 9);
  EXPECT_FALSE(strategy_valid(l, Strategy::OutChannel, 1));
  // In-channel all-reduce of the output: 2 (p-1)/p x O bytes.
  const double out = 4.0 * 64 * 28 * 28 * 4;
  EXPECT_DOUBLE_EQ(intra_layer_comm_seconds(l, Strategy::InChannelAllReduce, 4, 1, 4),
                   2 * 0.75 * out / 1e9);
}

}  // namespace
}  // namespace orchid::mapping
