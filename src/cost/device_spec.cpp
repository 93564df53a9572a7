#include "cost/device_spec.hpp"

#include <toml++/toml.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "cost/toml_keys.hpp"
#include "util/error.hpp"
#include "util/safe_file.hpp"

namespace orchid {

namespace fs = std::filesystem;

namespace {

constexpr double kMinFigure = 1e-9;
constexpr double kMaxFigure = 1e18;  // l2_bytes, FLOP/s figures and the like fit

// Reads keys from one toml table, remembering which were used so that unknown (often
// misspelt) keys can be reported instead of silently ignored.
class TableReader {
 public:
  TableReader(const toml::table& table, std::string file, std::string prefix)
      : table_(table), file_(std::move(file)), prefix_(std::move(prefix)) {}

  std::string key_name(const std::string& key) const { return prefix_ + key; }
  bool has(const std::string& key) const { return table_.get(key) != nullptr; }

  const toml::node& require(const std::string& key) {
    used_.insert(key);
    const toml::node* node = table_.get(key);
    if (!node) fail("{}: key '{}' is missing", file_, key_name(key));
    return *node;
  }

  std::string string(const std::string& key) {
    const toml::node& node = require(key);
    if (!node.is_string()) fail("{}: key '{}' must be a string", where(node), key_name(key));
    return *node.value<std::string>();
  }

  double number(const std::string& key) {
    const toml::node& node = require(key);
    if (!node.is_number()) fail("{}: key '{}' must be a number", where(node), key_name(key));
    const double v = *node.value<double>();
    if (!std::isfinite(v))
      fail("{}: key '{}' must be finite, got {}", where(node), key_name(key), v);
    return v;
  }

  // In [kMinFigure, kMaxFigure] (or exactly 0 with `allow_zero`): a 1e-300 bandwidth is as
  // unusable as a negative one, and 1e300 overflows the first product it enters.
  double positive(const std::string& key, bool allow_zero = false) {
    const double v = number(key);
    if (!(v >= kMinFigure && v <= kMaxFigure) && !(allow_zero && v == 0)) {
      fail("{}: key '{}' must be {}in [{}, {}], got {}", where(*table_.get(key)), key_name(key),
           allow_zero ? "0 or " : "", kMinFigure, kMaxFigure, v);
    }
    return v;
  }

  double fraction(const std::string& key) {
    const double v = number(key);
    if (!(v > 0 && v <= 1)) {
      fail("{}: key '{}' must be in (0, 1], got {}", where(*table_.get(key)), key_name(key), v);
    }
    return v;
  }

  int integer(const std::string& key, int min_value) {
    const toml::node& node = require(key);
    if (!node.is_integer()) fail("{}: key '{}' must be an integer", where(node), key_name(key));
    const auto v = *node.value<std::int64_t>();
    if (v < min_value || v > 1'000'000) {
      fail("{}: key '{}' must be an integer >= {}, got {}", where(node), key_name(key), min_value,
           v);
    }
    return static_cast<int>(v);
  }

  const toml::table& subtable(const std::string& key) {
    const toml::node& node = require(key);
    if (!node.is_table()) fail("{}: key '{}' must be a table", where(node), key_name(key));
    return *node.as_table();
  }

  void reject_unknown_keys() const {
    orchid::reject_unknown_keys(
        table_, [&](const std::string& key) { return used_.count(key) > 0; }, file_, "", prefix_);
  }

  std::string where(const toml::node& node) const {
    const auto& src = node.source();
    if (!src.begin) return file_;
    return fmt::format("{}:{}", file_, src.begin.line);
  }

  const std::string& file() const { return file_; }

 private:
  const toml::table& table_;
  std::string file_;
  std::string prefix_;
  std::set<std::string> used_;
};

std::vector<GemmTile> read_tiles(TableReader& model) {
  const std::string key = "gemm_tiles";
  const toml::node& node = model.require(key);
  const toml::array* array = node.as_array();
  const std::string bad =
      fmt::format("{}: key '{}' must be a non-empty array of [rows, cols, efficiency] triples",
                  model.where(node), model.key_name(key));
  if (!array || array->empty()) throw Error(bad);
  std::vector<GemmTile> tiles;
  for (const toml::node& entry : *array) {
    const toml::array* triple = entry.as_array();
    if (!triple || triple->size() != 3 || !(*triple)[0].is_integer() ||
        !(*triple)[1].is_integer() || !(*triple)[2].is_number()) {
      throw Error(bad);
    }
    const std::int64_t m = *(*triple)[0].value<std::int64_t>();
    const std::int64_t n = *(*triple)[1].value<std::int64_t>();
    GemmTile tile;
    tile.efficiency = *(*triple)[2].value<double>();
    if (m <= 0 || n <= 0 || m > 65536 || n > 65536 ||
        !(tile.efficiency > 0 && tile.efficiency <= 1)) {
      throw Error(bad + " (sizes in [1, 65536], efficiency in (0, 1])");
    }
    tile.m = static_cast<int>(m);
    tile.n = static_cast<int>(n);
    tiles.push_back(tile);
  }
  return tiles;
}

DeviceSpec parse_device_file(const std::string& file) {
  return parse_device_spec(read_regular_file(file, std::int64_t{16} << 20, "device file"), file);
}

}  // namespace

DeviceSpec parse_device_spec(const std::string& content, const std::string& file) {
  toml::table root;
  try {
    root = toml::parse(content, file);
  } catch (const toml::parse_error& e) {
    fail("{}:{}:{}: TOML parse error: {}", file, e.source().begin.line, e.source().begin.column,
         e.description());
  }
  DeviceSpec spec;
  spec.source_file = file;
  TableReader top(root, file, "");
  spec.name = top.string("name");
  spec.kind = top.string("kind");
  if (spec.kind != "gpu" && spec.kind != "cpu") {
    fail("{}: key 'kind' must be \"gpu\" or \"cpu\", got \"{}\"", file, spec.kind);
  }
  spec.description = top.string("description");
  spec.dram_bandwidth_gbs = top.positive("dram_bandwidth_gbs");
  spec.dram_peak_bandwidth_gbs = top.positive("dram_peak_bandwidth_gbs");
  spec.peak_fp32_gflops = top.positive("peak_fp32_gflops");
  spec.peak_tf32_gflops = top.positive("peak_tf32_gflops", true);
  spec.peak_fp16_gflops = top.positive("peak_fp16_gflops", true);
  spec.peak_int8_gops = top.has("peak_int8_gops") ? top.positive("peak_int8_gops", true) : 0.0;
  spec.l2_bytes = top.positive("l2_bytes");
  spec.compute_units = top.integer("compute_units", 1);
  spec.launch_overhead_us = top.positive("launch_overhead_us", true);

  TableReader model(top.subtable("model"), file, "model.");
  CostCurveParams& c = spec.curves;
  c.mem_half_bytes = model.positive("mem_half_bytes", true);
  c.coalesce_bytes = model.positive("coalesce_bytes");
  c.strided_efficiency = model.fraction("strided_efficiency");
  c.reduce_axis_half = model.positive("reduce_axis_half", true);
  c.reduce_min_efficiency = model.fraction("reduce_min_efficiency");
  c.vector_efficiency = model.fraction("vector_efficiency");
  c.transcendental_flops = model.positive("transcendental_flops");
  c.gemm_efficiency = model.fraction("gemm_efficiency");
  c.gemm_k_overhead = model.positive("gemm_k_overhead", true);
  c.gemm_max_split_k = model.integer("gemm_max_split_k", 1);
  c.gemm_tiles = read_tiles(model);
  c.direct_linear_efficiency = model.fraction("direct_linear_efficiency");
  model.reject_unknown_keys();
  top.reject_unknown_keys();
  return spec;
}

std::vector<std::string> available_devices(const ConfigRoots& roots) {
  return roots.names_in("devices", ".toml");
}

DeviceSpec load_device_spec(const std::string& name_or_path, const ConfigRoots& roots) {
  if (name_or_path.empty()) fail("device name is empty");
  if (looks_like_path(name_or_path)) return parse_device_file(name_or_path);
  const auto file = roots.find(fs::path("devices") / (name_or_path + ".toml"));
  if (!file) {
    std::string list;
    for (const auto& n : available_devices(roots)) list += (list.empty() ? "" : ", ") + n;
    fail("unknown device '{}' (no devices/{}.toml in the config roots {}); available: {}",
         name_or_path, name_or_path, roots.describe(), list.empty() ? "none" : list);
  }
  return parse_device_file(file->string());
}

}  // namespace orchid
