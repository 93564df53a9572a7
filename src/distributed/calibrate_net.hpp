// `orchid calibrate-net`: measures this MPI world's point-to-point latency/bandwidth
// (ping-pong between ranks 0 and 1) and the collectives the sharding strategies use
// (all-reduce, all-gather, reduce-scatter, MPI's own implementations on all ranks) over
// message sizes, and fits each to t(n) = latency + n / bandwidth; and the plan runner's own
// time per layer, from a chain of tiny layers run data-parallel on every rank, and what a
// split layer's messages take in it (a rate and a fixed time per layer, from chains split
// by rows over activations of 16 KB to 4 MB).
#pragma once

#include <string>

#include "distributed/network_fit.hpp"

namespace orchid::distributed {

struct CalibrateOptions {
  double min_bytes = 8;
  double max_bytes = 16 << 20;
  int reps = 20;  // timed repetitions per size (median taken)
};

// Collective: every rank must call it. Needs at least two ranks.
NetworkFigures calibrate_network(const CalibrateOptions& options = {});

// Runs calibrate_network and, on rank 0, rewrites `system_path` atomically with the
// figures (network_fit.hpp). Returns the figures on every rank.
NetworkFigures calibrate_system_file(const std::string& system_path,
                                     const CalibrateOptions& options = {});

}  // namespace orchid::distributed
