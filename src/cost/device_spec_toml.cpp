#include "cost/device_spec_toml.hpp"

#include <sstream>

#include <fmt/format.h>

namespace orchid {

namespace {

// TOML basic string: quotes, backslashes and control characters escaped.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Shortest text that reads back as the same double; always with a '.' or exponent only
// where needed (TOML integers are fine for whole numbers: the loader reads numbers).
std::string number(double v) {
  return fmt::format("{}", v);
}

}  // namespace

std::string device_spec_to_toml(const DeviceSpec& d, const std::string& header) {
  std::string out;
  std::istringstream lines(header);
  for (std::string line; std::getline(lines, line);)
    out += (line.empty() ? "#" : "# " + line) + "\n";
  if (!header.empty()) out += "\n";
  const CostCurveParams& c = d.curves;
  out += fmt::format("name = {}\n", quoted(d.name));
  out += fmt::format("kind = {}\n", quoted(d.kind));
  out += fmt::format("description = {}\n", quoted(d.description));
  out += fmt::format("dram_bandwidth_gbs = {}  # GB/s\n", number(d.dram_bandwidth_gbs));
  out += fmt::format("dram_peak_bandwidth_gbs = {}  # GB/s\n", number(d.dram_peak_bandwidth_gbs));
  out += fmt::format("peak_fp32_gflops = {}  # GFLOP/s\n", number(d.peak_fp32_gflops));
  out += fmt::format("peak_tf32_gflops = {}  # GFLOP/s\n", number(d.peak_tf32_gflops));
  out += fmt::format("peak_fp16_gflops = {}  # GFLOP/s\n", number(d.peak_fp16_gflops));
  if (d.peak_int8_gops > 0) {
    out += fmt::format("peak_int8_gops = {}  # GOP/s\n", number(d.peak_int8_gops));
  }
  out += fmt::format("l2_bytes = {}  # bytes\n", number(d.l2_bytes));
  out += fmt::format("compute_units = {}\n", d.compute_units);
  out += fmt::format("launch_overhead_us = {}  # us\n", number(d.launch_overhead_us));
  out += "\n[model]\n";
  out += fmt::format("mem_half_bytes = {}\n", number(c.mem_half_bytes));
  out += fmt::format("coalesce_bytes = {}\n", number(c.coalesce_bytes));
  out += fmt::format("strided_efficiency = {}\n", number(c.strided_efficiency));
  out += fmt::format("reduce_axis_half = {}\n", number(c.reduce_axis_half));
  out += fmt::format("reduce_min_efficiency = {}\n", number(c.reduce_min_efficiency));
  out += fmt::format("vector_efficiency = {}\n", number(c.vector_efficiency));
  out += fmt::format("transcendental_flops = {}\n", number(c.transcendental_flops));
  out += fmt::format("gemm_efficiency = {}\n", number(c.gemm_efficiency));
  out += fmt::format("gemm_k_overhead = {}\n", number(c.gemm_k_overhead));
  out += fmt::format("gemm_max_split_k = {}\n", c.gemm_max_split_k);
  std::string tiles;
  for (const GemmTile& t : c.gemm_tiles) {
    tiles +=
        fmt::format("{}[{}, {}, {}]", tiles.empty() ? "" : ", ", t.m, t.n, number(t.efficiency));
  }
  out += fmt::format("gemm_tiles = [{}]\n", tiles);
  out += fmt::format("direct_linear_efficiency = {}\n", number(c.direct_linear_efficiency));
  return out;
}

}  // namespace orchid
