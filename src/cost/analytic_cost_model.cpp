#include "cost/analytic_cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "cost/cost_model.hpp"
#include "ir/graph_stats.hpp"
#include "ir/op_traits.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

const Shape* typed_shape(const Graph& g, const std::string& name) {
  if (name.empty() || !g.has_tensor(name)) return nullptr;
  const TensorInfo& info = g.tensor(name);
  return info.has_type ? &info.shape : nullptr;
}

double bytes_of(const Graph& g, const std::string& name) {
  return static_cast<double>(tensor_bytes(g, name));
}

// Bandwidth fraction for an access pattern whose contiguous runs are `run_bytes` long:
// full bandwidth from one coalescing segment / cache line up, the strided floor below.
double run_efficiency(double run_bytes, const CostCurveParams& c) {
  const double covered = std::clamp(run_bytes / c.coalesce_bytes, 0.0, 1.0);
  return c.strided_efficiency + (1.0 - c.strided_efficiency) * covered;
}

// Shape and permutation with size-1 dims dropped: moving a size-1 dim moves no data.
void squeeze_permutation(const Shape& in, std::vector<std::int64_t> perm, Shape& shape,
                         std::vector<std::int64_t>& squeezed_perm) {
  const auto rank = static_cast<std::int64_t>(in.size());
  if (perm.empty()) {
    for (std::int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  std::vector<std::int64_t> new_index(in.size(), -1);
  for (std::size_t d = 0; d < in.size(); ++d) {
    if (in[d] != 1) {
      new_index[d] = static_cast<std::int64_t>(shape.size());
      shape.push_back(in[d]);
    }
  }
  for (std::int64_t p : perm) {
    if (p >= 0 && p < rank && new_index[static_cast<std::size_t>(p)] >= 0) {
      squeezed_perm.push_back(new_index[static_cast<std::size_t>(p)]);
    }
  }
}

// Transpose: the write side is contiguous; the read side runs along the innermost input
// dim only if it stays innermost, otherwise a tiled transpose still loses some bandwidth.
double transpose_efficiency(const Graph& g, const Node& node, const CostCurveParams& c) {
  const Shape* in = typed_shape(g, node.inputs.empty() ? "" : node.inputs[0]);
  if (!in || in->empty()) return 1.0;
  Shape shape;
  std::vector<std::int64_t> perm;
  squeeze_permutation(*in, node.attr_ints("perm", {}), shape, perm);
  if (shape.empty()) return 1.0;
  bool identity = true;
  for (std::size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == std::int64_t(i);
  if (identity) return 1.0;
  const double elem = static_cast<double>(dtype_size(g.tensor(node.inputs[0]).dtype));
  const auto last = static_cast<std::int64_t>(shape.size()) - 1;
  if (perm.back() == last) {
    return run_efficiency(static_cast<double>(shape.back()) * elem, c);
  }
  return c.strided_efficiency;
}

// Gather along `axis` copies rows of prod(dims after axis) contiguous elements.
double gather_efficiency(const Graph& g, const Node& node, const CostCurveParams& c) {
  const Shape* data = typed_shape(g, node.inputs.empty() ? "" : node.inputs[0]);
  if (!data || data->empty()) return 1.0;
  const auto rank = static_cast<std::int64_t>(data->size());
  std::int64_t axis = node.attr_int("axis", 0);
  if (node.op_type == "GatherND") {
    // Rows are the slices after the batch dims and the k indexed axes.
    const Shape* idx = typed_shape(g, node.inputs.size() > 1 ? node.inputs[1] : "");
    if (!idx || idx->empty()) return 1.0;
    axis = node.attr_int("batch_dims", 0) + idx->back() - 1;
  }
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return 1.0;
  double run = static_cast<double>(dtype_size(g.tensor(node.inputs[0]).dtype));
  for (std::int64_t d = axis + 1; d < rank; ++d) run *= static_cast<double>((*data)[d]);
  return run_efficiency(run, c);
}

// Reductions: short reduced extents leave little work per output; reducing along an
// outer axis reads with a stride unless the kept inner extent is long enough to coalesce.
double reduction_efficiency(const Graph& g, const Node& node, const CostCurveParams& c) {
  const Shape* in = typed_shape(g, node.inputs.empty() ? "" : node.inputs[0]);
  if (!in || in->empty()) return 1.0;
  const auto rank = static_cast<std::int64_t>(in->size());
  std::vector<bool> reduced(in->size(), false);
  if (node.op_type.rfind("Global", 0) == 0) {
    for (std::int64_t d = 2; d < rank; ++d) reduced[static_cast<std::size_t>(d)] = true;
  } else {
    std::vector<std::int64_t> axes = node.attr_ints("axes", {});
    if (node.has_attribute("axis")) axes = {node.attr_int("axis", 0)};  // ArgMax/ArgMin
    if (node.op_type == "TopK") axes = {node.attr_int("axis", -1)};     // input 1 is K
    if (axes.empty() && node.has_input(1) && g.has_tensor(node.inputs[1]) &&
        g.tensor(node.inputs[1]).is_constant()) {
      axes = g.tensor(node.inputs[1]).data->to_int64s();
    }
    if (axes.empty()) {
      if (node.attr_int("noop_with_empty_axes", 0) != 0) return 1.0;
      reduced.assign(in->size(), true);
    }
    for (std::int64_t a : axes) {
      if (a < 0) a += rank;
      if (a >= 0 && a < rank) reduced[static_cast<std::size_t>(a)] = true;
    }
  }
  // Size-1 dims move no data: reducing or keeping them changes nothing.
  double length = 1;
  std::int64_t inner = -1;  // innermost dim that carries data
  for (std::size_t d = 0; d < in->size(); ++d) {
    if ((*in)[d] == 1) {
      reduced[d] = false;
      continue;
    }
    inner = static_cast<std::int64_t>(d);
    if (reduced[d]) length *= static_cast<double>((*in)[d]);
  }
  if (inner < 0 || length == 1) return 1.0;  // a copy
  if (reduced[static_cast<std::size_t>(inner)]) {
    // Along the contiguous axis: a short row leaves a warp / vector mostly idle.
    return c.reduce_min_efficiency +
           (1.0 - c.reduce_min_efficiency) * length / (length + c.reduce_axis_half);
  }
  // Along an outer axis, one output per lane: reads coalesce across the kept inner dims.
  double kept_run = static_cast<double>(dtype_size(g.tensor(node.inputs[0]).dtype));
  for (std::int64_t d = rank - 1; d >= 0 && !reduced[static_cast<std::size_t>(d)]; --d) {
    kept_run *= static_cast<double>((*in)[static_cast<std::size_t>(d)]);
  }
  return run_efficiency(kept_run, c);
}

// Bytes a kernel reads of input `name`: all of it, unless every reader inside the kernel
// is a Slice or a Gather on its data input, which touch only what they output.
double input_read_bytes(const KernelView& k, const std::string& name) {
  const Graph& g = *k.graph;
  const double full = bytes_of(g, name);
  double touched = 0;
  for (std::size_t i : k.nodes) {
    const Node& node = g.nodes[i];
    for (std::size_t j = 0; j < node.inputs.size(); ++j) {
      if (node.inputs[j] != name) continue;
      const bool partial = j == 0 && (node.op_type == "Slice" || node.op_type == "Gather") &&
                           !node.outputs.empty() && typed_shape(g, node.outputs[0]);
      if (!partial) return full;
      touched += bytes_of(g, node.outputs[0]);
    }
  }
  return std::min(full, touched > 0 ? touched : full);
}

// The unit a linear node runs on: tensor-core FP16 when all its float inputs are f16 or
// bf16 (the same tensor-core rate on A100/H100/H200),
// TF32 for f32 on devices that have it (the FP32 path Korch measured on A100), else the
// FP32 units.
MatrixPeak matrix_peak_kind(const Graph& g, const Node& node) {
  if (node.op_type == "QLinearConv" || node.op_type == "QLinearMatMul") return MatrixPeak::Int8;
  bool all_f16 = true;
  for (std::size_t j = 0; j < std::min<std::size_t>(node.inputs.size(), 2); ++j) {
    if (!node.has_input(j) || !g.has_tensor(node.inputs[j])) continue;
    all_f16 = all_f16 && is_half_float(g.tensor(node.inputs[j]).dtype);
  }
  return all_f16 ? MatrixPeak::Fp16 : MatrixPeak::Tf32;
}

double matrix_peak_gflops(MatrixPeak kind, const DeviceSpec& d) {
  // int8 linear primitives: the device's int8 rate, else (no int8 figure) its fp32 one.
  if (kind == MatrixPeak::Int8) return d.peak_int8_gops > 0 ? d.peak_int8_gops : d.peak_fp32_gflops;
  if (kind == MatrixPeak::Fp16 && d.peak_fp16_gflops > 0) return d.peak_fp16_gflops;
  if (kind != MatrixPeak::Fp32 && d.peak_tf32_gflops > 0) return d.peak_tf32_gflops;
  return d.peak_fp32_gflops;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

class AnalyticCostModel final : public CostModel {
 public:
  explicit AnalyticCostModel(DeviceSpec device) : device_(std::move(device)) {}

  double latency_us(const KernelView& kernel) const override {
    return analytic_kernel_cost(kernel, device_).total_us;
  }

  std::string describe() const override {
    const double matrix =
        device_.peak_tf32_gflops > 0 ? device_.peak_tf32_gflops : device_.peak_fp32_gflops;
    return fmt::format("analytic model of {} ({}): {:g} GB/s, {:g} TFLOP/s linear, launch {:g} us",
                       device_.name, device_.description, device_.dram_bandwidth_gbs, matrix / 1e3,
                       device_.launch_overhead_us);
  }

 private:
  DeviceSpec device_;
};

}  // namespace

bool linear_gemm_shape(const Graph& g, const Node& node, GemmShape& s) {
  if (node.op_type == "QLinearConv" || node.op_type == "QLinearMatMul") {
    if (node.inputs.size() < 4) return false;
    Node as_float;  // the same GEMM as the float op on (x, w)
    as_float.op_type = node.op_type == "QLinearConv" ? "Conv" : "MatMul";
    as_float.inputs = {node.inputs[0], node.inputs[3]};
    as_float.outputs = node.outputs;
    as_float.attributes = node.attributes;
    return linear_gemm_shape(g, as_float, s);
  }
  const std::string& op = node.op_type;
  if (node.inputs.size() < 2 || node.outputs.empty()) return false;
  const Shape* a = typed_shape(g, node.inputs[0]);
  const Shape* b = typed_shape(g, node.inputs[1]);
  const Shape* y = typed_shape(g, node.outputs[0]);
  if (!a || !b || !y || a->empty() || b->empty()) return false;
  if (op == "MatMul") {
    s.k = a->back();
    s.m = a->size() >= 2 ? (*a)[a->size() - 2] : 1;
    s.n = b->size() >= 2 ? b->back() : 1;
    const std::int64_t mn = s.m * s.n;
    s.batch = mn > 0 ? std::max<std::int64_t>(1, shape_numel(*y) / mn) : 1;
    return true;
  }
  if (op == "Gemm") {
    if (a->size() != 2 || b->size() != 2) return false;
    const bool ta = node.attr_int("transA", 0) != 0;
    const bool tb = node.attr_int("transB", 0) != 0;
    s.m = ta ? (*a)[1] : (*a)[0];
    s.k = ta ? (*a)[0] : (*a)[1];
    s.n = tb ? (*b)[0] : (*b)[1];
    s.batch = 1;
    return true;
  }
  if (op == "Conv" || op == "ConvTranspose") {
    if (a->size() < 3 || b->size() != a->size() || y->size() != a->size()) return false;
    const std::int64_t groups = std::max<std::int64_t>(1, node.attr_int("group", 1));
    std::int64_t window = 1;
    for (std::size_t d = 2; d < b->size(); ++d) window *= (*b)[d];
    std::int64_t spatial_in = 1, spatial_out = 1;
    for (std::size_t d = 2; d < a->size(); ++d) spatial_in *= (*a)[d];
    for (std::size_t d = 2; d < y->size(); ++d) spatial_out *= (*y)[d];
    s.batch = groups;
    if (op == "Conv") {  // implicit GEMM: output pixels x output channels x (Cin/g * window)
      s.m = (*a)[0] * spatial_out;
      s.n = (*b)[0] / groups;
      s.k = (*b)[1] * window;
    } else {  // scatter form: input pixels x (Cout/g * window) x Cin/g
      s.m = (*a)[0] * spatial_in;
      s.n = (*b)[1] * window;
      s.k = (*b)[0] / groups;
    }
    return true;
  }
  return false;
}

double linear_time_us(const GemmShape& s, const DeviceSpec& d, double matrix_peak_gflops) {
  const CostCurveParams& c = d.curves;
  if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0) return 0.0;
  const double units = d.compute_units;
  const double unit_peak = matrix_peak_gflops * 1e3 / units;  // FLOP per us per unit
  const double bw = d.dram_bandwidth_gbs * 1e3;               // bytes per us
  double best = std::numeric_limits<double>::infinity();
  for (const GemmTile& t : c.gemm_tiles) {
    const std::int64_t tiles_mn = s.batch * ceil_div(s.m, t.m) * ceil_div(s.n, t.n);
    for (int split = 1; split <= c.gemm_max_split_k && split <= s.k; ++split) {
      const std::int64_t k_part = ceil_div(s.k, split);
      const std::int64_t tiles = tiles_mn * split;
      const double waves = static_cast<double>(ceil_div(tiles, d.compute_units));
      // Each tile runs at its unit's share of the peak; the k overhead models the
      // prologue/epilogue that does no multiply-adds.
      const double tile_us = 2.0 * t.m * t.n * (static_cast<double>(k_part) + c.gemm_k_overhead) /
                             (unit_peak * c.gemm_efficiency * t.efficiency);
      double time = waves * tile_us;
      // Split-K writes fp32 partials and reads them back in a reduction pass.
      if (split > 1) time += 2.0 * split * 4.0 * static_cast<double>(s.batch * s.m * s.n) / bw;
      best = std::min(best, time);
    }
  }
  const double direct =
      static_cast<double>(s.flops()) / (d.peak_fp32_gflops * 1e3 * c.direct_linear_efficiency);
  return std::min(best, direct);
}

KernelCostTerms kernel_cost_terms(const KernelView& k, const DeviceSpec& d) {
  if (!k.graph) fail("analytic cost model: kernel view has no graph");
  const Graph& g = *k.graph;
  const CostCurveParams& c = d.curves;
  KernelCostTerms terms;
  for (const auto& t : k.inputs) terms.dram_bytes += input_read_bytes(k, t);
  for (const auto& t : k.outputs) terms.dram_bytes += bytes_of(g, t);

  for (std::size_t i : k.nodes) {
    const Node& node = g.nodes.at(i);
    const OpTraits& traits = op_traits(node.op_type);
    const double flops = static_cast<double>(node_flops(g, node));
    terms.flops += flops;
    switch (traits.access) {
      case AccessPattern::Linear: {
        GemmShape shape;
        if (linear_gemm_shape(g, node, shape)) {
          terms.linear_flops += static_cast<double>(shape.flops());
          terms.linear.push_back(
              {shape.batch, shape.m, shape.n, shape.k, matrix_peak_kind(g, node)});
          // A fused bias (Gemm C, Conv B) is vector work on top of the GEMM.
          terms.plain_vector_flops += std::max(0.0, flops - static_cast<double>(shape.flops()));
        } else {
          terms.plain_vector_flops += flops;
        }
        break;
      }
      case AccessPattern::Reduction:
        terms.access_efficiency =
            std::min(terms.access_efficiency, reduction_efficiency(g, node, c));
        terms.plain_vector_flops += flops;
        break;
      case AccessPattern::Transpose:
        terms.access_efficiency =
            std::min(terms.access_efficiency, transpose_efficiency(g, node, c));
        break;
      case AccessPattern::Gather:
        terms.access_efficiency = std::min(terms.access_efficiency, gather_efficiency(g, node, c));
        break;
      case AccessPattern::Layout:
        terms.plain_vector_flops += flops;  // Resize interpolation; 0 for pure data movement
        break;
      case AccessPattern::Elementwise:
      case AccessPattern::Window:
        (traits.transcendental ? terms.transcendental_vector_flops : terms.plain_vector_flops) +=
            flops;
        break;
    }
  }
  return terms;
}

KernelCost cost_from_terms(const KernelCostTerms& t, const DeviceSpec& d) {
  const CostCurveParams& c = d.curves;
  KernelCost cost;
  cost.launch_us = d.launch_overhead_us;
  cost.dram_bytes = t.dram_bytes;
  cost.flops = t.flops;
  cost.linear_flops = t.linear_flops;
  cost.access_efficiency = t.access_efficiency;
  double linear_us = 0;
  for (const auto& l : t.linear) {
    GemmShape shape;
    shape.batch = l.batch;
    shape.m = l.m;
    shape.n = l.n;
    shape.k = l.k;
    linear_us += linear_time_us(shape, d, matrix_peak_gflops(l.peak, d));
  }
  const double vector_flops =
      t.plain_vector_flops + t.transcendental_vector_flops * c.transcendental_flops;
  // Small transfers are latency bound: effective bandwidth bw * bytes / (bytes + half),
  // i.e. a fixed half / bw on top of the streaming time. The access pattern slows the
  // streaming part only.
  const double bw = d.dram_bandwidth_gbs * 1e3;  // bytes per us
  cost.memory_us = cost.dram_bytes > 0
                       ? cost.dram_bytes / (bw * cost.access_efficiency) + c.mem_half_bytes / bw
                       : 0.0;
  cost.compute_us = linear_us + vector_flops / (d.peak_fp32_gflops * 1e3 * c.vector_efficiency);
  cost.total_us = cost.launch_us + std::max(cost.memory_us, cost.compute_us);
  return cost;
}

KernelCost analytic_kernel_cost(const KernelView& k, const DeviceSpec& d) {
  return cost_from_terms(kernel_cost_terms(k, d), d);
}

std::unique_ptr<CostModel> make_analytic_cost_model(const DeviceSpec& device) {
  return std::make_unique<AnalyticCostModel>(device);
}

}  // namespace orchid
