// Sharding strategies and collective formulas (mapping notes, section 4.2).
#include "mapping/sharding.hpp"

#include <algorithm>

namespace orchid::mapping {

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::None:
      return "none";
    case Strategy::Batch:
      return "batch";
    case Strategy::OutChannel:
      return "out-ch";
    case Strategy::InChannelAllReduce:
      return "in-ch/all-reduce";
    case Strategy::InChannelReduceScatter:
      return "in-ch/reduce-scatter";
    case Strategy::Spatial:
      return "spatial";
  }
  return "?";
}

namespace {
double per_second(double bw_gbs) {
  return bw_gbs * 1e9;
}
std::int64_t split(std::int64_t v, int p) {
  return v / p + (v % p != 0 ? 1 : 0);  // ceil(v / p) without forming v + p - 1
}
}  // namespace

double ring_all_reduce_seconds(double bytes, int p, double bw) {
  return p <= 1 ? 0 : 2.0 * (p - 1) / p * bytes / per_second(bw);
}
double ring_reduce_scatter_seconds(double bytes, int p, double bw) {
  return p <= 1 ? 0 : (p - 1.0) / p * bytes / per_second(bw);
}
double ring_all_gather_seconds(double bytes, int p, double bw) {
  return p <= 1 ? 0 : (p - 1.0) / p * bytes / per_second(bw);
}
double all_to_all_seconds(double bytes, int p, double bw) {
  return p <= 1 ? 0 : (p - 1.0) / (static_cast<double>(p) * p) * bytes / per_second(bw);
}

bool strategy_valid(const Layer& l, Strategy s, int p) {
  if (p <= 1) return s == Strategy::None;
  switch (s) {
    case Strategy::None:
      return true;
    case Strategy::Batch:
      return l.batch >= 2;  // fewer samples than devices leaves some idle
    case Strategy::OutChannel:
      switch (l.kind) {
        case LayerKind::Conv:
        case LayerKind::Fc:
          return l.m >= p;
        case LayerKind::MatMul:
          return l.g >= p;
        case LayerKind::Lstm:
          return l.hidden >= p;
        case LayerKind::Cheap:
          return l.elems >= p;
      }
      return false;
    case Strategy::InChannelAllReduce:
    case Strategy::InChannelReduceScatter:
      return (l.kind == LayerKind::Conv || l.kind == LayerKind::Fc ||
              l.kind == LayerKind::MatMul) &&
             l.n >= p;
    case Strategy::Spatial:
      switch (l.kind) {
        case LayerKind::Conv:
          return l.r >= p;
        case LayerKind::Fc:
          return l.k >= p;
        case LayerKind::MatMul:
          return l.m >= p;
        case LayerKind::Lstm:
          return false;
        case LayerKind::Cheap:
          return l.elems >= p;
      }
      return false;
  }
  return false;
}

Layer shard_layer(const Layer& l, Strategy s, int p) {
  Layer out = l;
  if (p <= 1) return out;
  auto scale = [&](std::int64_t v) { return v == 0 ? 0 : std::max<std::int64_t>(1, split(v, p)); };
  if (s != Strategy::None && s != Strategy::Batch) out.split = l.split * p;
  switch (s) {
    case Strategy::None:
      break;
    case Strategy::Batch:
      out.batch = split(l.batch, p);
      break;
    case Strategy::OutChannel:
      if (l.kind == LayerKind::MatMul)
        out.g = split(l.g, p);
      else if (l.kind == LayerKind::Lstm)
        out.hidden = split(l.hidden, p);
      else
        out.m = split(l.m, p);
      out.elems = scale(l.elems);
      out.out_elems = scale(l.out_elems);
      break;
    case Strategy::InChannelAllReduce:
    case Strategy::InChannelReduceScatter:
      out.n = split(l.n, p);
      out.in_elems = scale(l.in_elems);
      out.elems = scale(l.elems);
      break;
    case Strategy::Spatial:
      if (l.kind == LayerKind::Conv)
        out.r = split(l.r, p);
      else if (l.kind == LayerKind::Fc)
        out.k = split(l.k, p);
      else if (l.kind == LayerKind::MatMul)
        out.m = split(l.m, p);
      out.elems = scale(l.elems);
      out.in_elems = scale(l.in_elems);
      out.out_elems = scale(l.out_elems);
      break;
  }
  return out;
}

double shard_weight_elements(const Layer& l, Strategy s, int p) {
  const double w = l.weight_elements();
  if (p <= 1) return w;
  if (s == Strategy::OutChannel || s == Strategy::InChannelAllReduce ||
      s == Strategy::InChannelReduceScatter) {
    return w / p;
  }
  return w;
}

Layout input_layout(Strategy s, int p) {
  if (p <= 1) return Layout::Single;
  switch (s) {
    case Strategy::None:
      return Layout::Single;
    case Strategy::Batch:
      return Layout::SplitBatch;
    case Strategy::OutChannel:
      return Layout::Replicated;
    case Strategy::InChannelAllReduce:
    case Strategy::InChannelReduceScatter:
      return Layout::SplitChannel;
    case Strategy::Spatial:
      return Layout::SplitSpatial;
  }
  return Layout::Single;
}

Layout output_layout(Strategy s, int p) {
  if (p <= 1) return Layout::Single;
  switch (s) {
    case Strategy::None:
      return Layout::Single;
    case Strategy::Batch:
      return Layout::SplitBatch;
    case Strategy::OutChannel:
      return Layout::SplitChannel;
    case Strategy::InChannelAllReduce:
      return Layout::Replicated;
    case Strategy::InChannelReduceScatter:
      return Layout::SplitChannel;
    case Strategy::Spatial:
      return Layout::SplitSpatial;
  }
  return Layout::Single;
}

double intra_layer_comm_seconds(const Layer& l, Strategy s, int p, double bw, double bpe) {
  if (p <= 1) return 0;
  const double out_bytes = l.output_elements() * bpe;
  switch (s) {
    case Strategy::InChannelAllReduce:
      return ring_all_reduce_seconds(out_bytes, p, bw);
    case Strategy::InChannelReduceScatter:
      return ring_reduce_scatter_seconds(out_bytes, p, bw);
    case Strategy::Spatial:
      if (l.kind == LayerKind::Conv && l.k > l.s) {
        // Each device exchanges (K - S) input rows with each neighbour, concurrently.
        const double row = static_cast<double>(l.n) * ((l.c - 1) * l.s + l.k) * l.batch;
        return 2.0 * (l.k - l.s) * row * bpe / per_second(bw);
      }
      return 0;
    case Strategy::OutChannel:
      if (l.kind == LayerKind::Lstm) {
        // Every step needs the whole hidden state on every device.
        const double h = static_cast<double>(l.hidden) * l.batch * bpe;
        return static_cast<double>(l.iter) * ring_all_gather_seconds(h, p, bw);
      }
      return 0;
    default:
      return 0;
  }
}

double reshard_seconds(Layout from, Layout to, double bytes, int p, double bw) {
  if (p <= 1 || from == to || from == Layout::Replicated) return 0;
  const double t = bytes / per_second(bw);
  if (from == Layout::Single) {
    if (to == Layout::Replicated) return t;  // pipelined broadcast
    return (p - 1.0) / p * t;                // scatter
  }
  // from a split layout
  if (to == Layout::Replicated || to == Layout::Single)
    return ring_all_gather_seconds(bytes, p, bw);
  return all_to_all_seconds(bytes, p, bw);
}

}  // namespace orchid::mapping
