// Fitting measured message times to the alpha-beta model t(n) = latency + n / bandwidth
// (least squares over message sizes), as calibrate-net writes into a system file. No
// MPI here, so the fit is unit-tested without ranks.
#pragma once

#include <string>
#include <vector>

namespace orchid::distributed {

struct Sample {
  double bytes = 0;
  double seconds = 0;
};

struct AlphaBeta {
  double latency_us = 0;
  double gbs = 0;  // 1e9 bytes per second
  double rms_relative_error = 0;
  // Seconds for `bytes` under the fit.
  double seconds(double bytes) const { return latency_us * 1e-6 + bytes / (gbs * 1e9); }
};

// Least squares on (bytes, seconds); the latency is clamped at 0 and the bandwidth must
// come out positive (orchid::Error otherwise, naming `what`).
AlphaBeta fit_alpha_beta(const std::vector<Sample>& samples, const std::string& what);

// What calibrate-net measured.
struct NetworkFigures {
  int ranks = 0;
  AlphaBeta p2p;             // one message, one direction
  AlphaBeta allreduce;       // whole-buffer size
  AlphaBeta allgather;       // gathered (output) size
  AlphaBeta reduce_scatter;  // whole input size
  // The plan runner's own time between two layers of a rank (receives checked, messages
  // posted, timeline events, tensors released), beside the layers' computations, which
  // `orchid map` measures; -1: not measured.
  double runner_step_us = -1;
  // What a split layer's messages take in the plan runner (blocks packed, sent, joined
  // into fresh tensors), as 1e9 bytes per second; 0: not measured.
  double runner_gbs = 0;
  // The runner's fixed time per split layer and sample beyond the messages' latencies
  // (posting, waiting, joining the blocks, whatever their size); -1: not measured.
  double runner_split_us = -1;
};

// The system file `text` with [bandwidth] intra/inter_group_gbs and host_gbs set from the
// point-to-point fit and a [network] table of every fit and the runner's figures
// ([network.runner] step_us, gbs and split_us, when measured) (replaced if present). Other
// keys are kept; of the comments only the file's leading block survives.
std::string with_network_figures(const std::string& text, const std::string& path,
                                 const NetworkFigures& figures);

}  // namespace orchid::distributed
