// Per-layer cost on one design. FPGA designs use the published analytic models the H2H
// code implements (Zhang et al. FPGA'15 tile model for conv, ESE for FC, the unified
// LSTM model); here GPUs get a roofline from the device spec, which `orchid map` uses
// only with --gpu-roofline or as the counted fallback of OrchestratedCostProvider
// (orchestrated_cost.hpp: the kernel orchestrator's optimal plan per layer subgraph).
// Everything the mapper asks goes through LayerCostProvider.
#pragma once

#include "mapping/design.hpp"
#include "mapping/workload.hpp"

namespace orchid::mapping {

// Which host/network transfers a layer pays (H2H's WEItrans / IFMtrans / OFMtrans).
struct XferFlags {
  bool weights = true;
  bool ifm = true;
  bool ofm = true;
};

// On-device time of a whole (possibly sharded) layer: compute plus DRAM <-> chip
// traffic, no host transfers. Returns a negative number when `design` cannot run it.
class LayerCostProvider {
 public:
  virtual ~LayerCostProvider() = default;
  virtual double compute_seconds(const Layer& layer, const Design& design) const = 0;
};

// The FPGA models for FPGA designs and gpu_roofline_seconds for GPU designs.
class AnalyticCostProvider : public LayerCostProvider {
 public:
  double compute_seconds(const Layer& layer, const Design& design) const override;
};
const LayerCostProvider& default_cost_provider();

// Zhang et al. tile model for one sample of a conv: ceil(R/Tr) ceil(C/Tc) ceil(M/Tm)
// (ceil(N/Tn) (t_w + t_i + t_comp) + t_o).
double conv_core_seconds(const Design& d, std::int64_t m, std::int64_t n, std::int64_t r,
                         std::int64_t c, std::int64_t k);
// ESE-style FC: max(t_w + t_i, 2MNK/Th, t_o) for an M x N weight and K columns.
double fc_core_seconds(const Design& d, std::int64_t m, std::int64_t n, std::int64_t k);
// Iter * max(t_in, 2 G (H D + H^2)/Th, t_out) for one sequence; G gate blocks (LSTM 4).
double lstm_core_seconds(const Design& d, std::int64_t hidden, std::int64_t dimen,
                         std::int64_t iter, std::int64_t gates = 4);
// Elementwise work streams elements in and out through the DRAM port.
double cheap_core_seconds(const Design& d, double elems);
// launch + max(ops / peak, bytes / DRAM bandwidth).
double gpu_roofline_seconds(const GpuSpec& gpu, const Layer& layer);

// H2H's host-link terms: weights M N K K, IFM N (2R)(2C) (as the H2H code charges it),
// OFM M R C elements, over `host_gbs`.
double host_transfer_seconds(const Design& d, const Layer& layer, XferFlags flags, double host_gbs);

}  // namespace orchid::mapping
