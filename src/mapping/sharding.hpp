// Sharding one layer over the p devices of a group, the data layouts it consumes and
// produces, and the ring-collective costs of the communication that implies.
// T = bytes of the tensor, bw = per-link bandwidth in GB/s; results in seconds.
#pragma once

#include <cstdint>

#include "mapping/workload.hpp"

namespace orchid::mapping {

enum class Strategy : std::uint8_t {
  None,                    // the whole layer on the group's first device
  Batch,                   // split the batch, weights replicated
  OutChannel,              // split output channels (heads for attention, gate rows for LSTM)
  InChannelAllReduce,      // split input channels, partial sums all-reduced
  InChannelReduceScatter,  // same, reduce-scattered: output split on channels
  Spatial,                 // split output rows (tokens for FC/attention), halo exchange
};
inline constexpr int kStrategies = 6;
const char* strategy_name(Strategy s);

// Where a tensor lives on a group.
enum class Layout : std::uint8_t { Single, Replicated, SplitBatch, SplitChannel, SplitSpatial };

// Ring collectives over p devices.
double ring_all_reduce_seconds(double bytes, int p, double bw_gbs);      // 2(p-1)/p T/bw
double ring_reduce_scatter_seconds(double bytes, int p, double bw_gbs);  // (p-1)/p T/bw
double ring_all_gather_seconds(double bytes, int p, double bw_gbs);      // (p-1)/p T/bw
double all_to_all_seconds(double bytes, int p, double bw_gbs);           // (p-1)/p^2 T/bw

bool strategy_valid(const Layer& layer, Strategy s, int p);
// The part of the layer one device computes (dims rounded up).
Layer shard_layer(const Layer& layer, Strategy s, int p);
// Weight elements each device holds.
double shard_weight_elements(const Layer& layer, Strategy s, int p);
Layout input_layout(Strategy s, int p);
Layout output_layout(Strategy s, int p);
// Communication inside the layer: partial-sum reduction, halo exchange, LSTM state.
double intra_layer_comm_seconds(const Layer& layer, Strategy s, int p, double bw_gbs,
                                double bytes_per_element);
// Converting a tensor of `bytes` from one layout to another on a group of p devices:
// split -> replicated all-gather, split -> other split all-to-all, replicated -> split
// free, single -> split scatter, single -> replicated broadcast.
double reshard_seconds(Layout from, Layout to, double bytes, int p, double bw_gbs);

}  // namespace orchid::mapping
