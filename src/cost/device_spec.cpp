#include "cost/device_spec.hpp"

#include <toml++/toml.h>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "util/error.hpp"

namespace orchid {

namespace fs = std::filesystem;

namespace {

// Reads keys from one toml table, remembering which were used so that unknown (often
// misspelt) keys can be reported instead of silently ignored.
class TableReader {
 public:
  TableReader(const toml::table& table, std::string file, std::string prefix)
      : table_(table), file_(std::move(file)), prefix_(std::move(prefix)) {}

  std::string key_name(const std::string& key) const { return prefix_ + key; }

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
    return *node.value<double>();
  }

  // > 0 (`allow_zero` = false) or >= 0.
  double positive(const std::string& key, bool allow_zero = false) {
    const double v = number(key);
    if (!(v > 0) && !(allow_zero && v == 0)) {
      fail("{}: key '{}' must be {}, got {}", where(*table_.get(key)), key_name(key),
           allow_zero ? ">= 0" : "> 0", v);
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
    for (const auto& [k, v] : table_) {
      const std::string key(k.str());
      if (!used_.count(key)) fail("{}: unknown key '{}'", where(v), key_name(key));
    }
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
    GemmTile tile;
    tile.m = static_cast<int>(*(*triple)[0].value<std::int64_t>());
    tile.n = static_cast<int>(*(*triple)[1].value<std::int64_t>());
    tile.efficiency = *(*triple)[2].value<double>();
    if (tile.m <= 0 || tile.n <= 0 || !(tile.efficiency > 0 && tile.efficiency <= 1)) {
      throw Error(bad + " (sizes > 0, efficiency in (0, 1])");
    }
    tiles.push_back(tile);
  }
  return tiles;
}

DeviceSpec parse_device_file(const std::string& file) {
  toml::table root;
  try {
    root = toml::parse_file(file);
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

bool looks_like_path(const std::string& s) {
  return s.find('/') != std::string::npos ||
         (s.size() > 5 && s.compare(s.size() - 5, 5, ".toml") == 0);
}

}  // namespace

std::vector<std::string> available_devices(const ConfigRoots& roots) {
  return roots.names_in("devices", ".toml");
}

DeviceSpec load_device_spec(const std::string& name_or_path, const ConfigRoots& roots) {
  if (name_or_path.empty()) fail("device name is empty");
  if (looks_like_path(name_or_path)) {
    if (!fs::is_regular_file(name_or_path)) fail("{}: device file not found", name_or_path);
    return parse_device_file(name_or_path);
  }
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
