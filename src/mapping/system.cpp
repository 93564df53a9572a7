// TOML loading and validation of design libraries and systems.
#include "mapping/system.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <toml++/toml.h>

#include "cost/device_spec.hpp"
#include "cost/toml_keys.hpp"
#include "util/error.hpp"
#include "util/printable.hpp"
#include "util/safe_file.hpp"

namespace orchid::mapping {

std::string_view kind_name(LayerKind kind) {
  switch (kind) {
    case LayerKind::Conv:
      return "conv";
    case LayerKind::Fc:
      return "fc";
    case LayerKind::MatMul:
      return "matmul";
    case LayerKind::Lstm:
      return "lstm";
    case LayerKind::Cheap:
      return "cheap";
  }
  return "?";
}

bool parse_kind(std::string_view text, LayerKind& kind) {
  for (int k = 0; k < kLayerKinds; ++k) {
    if (kind_name(static_cast<LayerKind>(k)) == text) {
      kind = static_cast<LayerKind>(k);
      return true;
    }
  }
  return false;
}

namespace {

constexpr std::int64_t kMaxConfigBytes = std::int64_t{16} << 20;
constexpr double kMinFigure = 1e-6;
constexpr double kMaxFigure = 1e9;
constexpr int kMaxDevices = 4096;

std::string read_text(const std::string& path, const char* what) {
  return read_regular_file(path, kMaxConfigBytes, fmt::format("{} file", what));
}

toml::table parse_toml(const std::string& text, const std::string& path) {
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    fail("{}:{}: TOML syntax error: {}", path, e.source().begin.line, e.description());
  }
}

// A number (integer or float) at `key`; `where` names the table for messages.
double number(const toml::table& t, const std::string& key, const std::string& path,
              const std::string& where, bool required, double fallback = 0) {
  const toml::node* node = t.get(key);
  if (node == nullptr) {
    if (required) fail("{}: {}: missing key '{}'", path, where, key);
    return fallback;
  }
  if (!node->is_number()) fail("{}: {}: key '{}' must be a number", path, where, key);
  const double v = *node->value<double>();
  if (!std::isfinite(v))
    fail("{}: {}: key '{}' must be a finite number, got {}", path, where, key, v);
  return v;
}

// Positive figures (bandwidths, throughputs, sizes) lie in [kMinFigure, kMaxFigure]: a
// 1e-300 bandwidth is as broken as a negative one (it overflows every time computed).
double positive(const toml::table& t, const std::string& key, const std::string& path,
                const std::string& where, bool required = true, double fallback = 0) {
  const double v = number(t, key, path, where, required, fallback);
  if (!(v >= kMinFigure && v <= kMaxFigure)) {
    fail("{}: {}: key '{}' must lie in [{}, {}], got {}", path, where, key, kMinFigure, kMaxFigure,
         v);
  }
  return v;
}

// A TOML integer in [lo, hi].
int integer(const toml::table& t, const std::string& key, const std::string& path,
            const std::string& where, int lo, int hi, bool required = true, int fallback = 0) {
  const toml::node* node = t.get(key);
  if (node == nullptr) {
    if (required) fail("{}: {}: missing key '{}'", path, where, key);
    return fallback;
  }
  const auto v = node->value_exact<std::int64_t>();
  if (!v || *v < lo || *v > hi) {
    fail("{}: {}: key '{}' must be an integer in [{}, {}]", path, where, key, lo, hi);
  }
  return static_cast<int>(*v);
}

std::string text(const toml::table& t, const std::string& key, const std::string& path,
                 const std::string& where, bool required, const std::string& fallback = "") {
  const toml::node* node = t.get(key);
  if (node == nullptr) {
    if (required) fail("{}: {}: missing key '{}'", path, where, key);
    return fallback;
  }
  if (auto v = node->value<std::string>()) return *v;
  fail("{}: {}: key '{}' must be a string", path, where, key);
}

std::vector<std::string> strings(const toml::table& t, const std::string& key,
                                 const std::string& path, const std::string& where) {
  std::vector<std::string> out;
  const toml::node* node = t.get(key);
  if (node == nullptr) return out;
  const toml::array* arr = node->as_array();
  if (arr == nullptr) fail("{}: {}: key '{}' must be an array of strings", path, where, key);
  for (const auto& item : *arr) {
    auto v = item.value<std::string>();
    if (!v) fail("{}: {}: key '{}' must be an array of strings", path, where, key);
    out.push_back(*v);
  }
  return out;
}

// A file a system names, relative to the system file: it must resolve (symlinks
// followed) inside the config tree, the folder above the system file's folder
// (configs/ for configs/systems/x.toml), so a downloaded system cannot read elsewhere.
std::string resolve(const std::string& base_file, const std::string& relative,
                    const std::string& key) {
  namespace fs = std::filesystem;
  if (fs::path(relative).is_absolute()) {
    fail("{}: key '{}': '{}' is absolute; name files relative to the system file", base_file, key,
         printable(relative));
  }
  const fs::path folder = fs::path(base_file).parent_path();
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(folder.empty() ? fs::path(".") : folder, ec);
  if (ec) fail("{}: its folder cannot be resolved: {}", base_file, ec.message());
  return confined_path(base.parent_path().string(), (base.filename() / relative).string(),
                       fmt::format("{}: key '{}'", base_file, key));
}

// A system's `device`, resolved like `--device`: a path (relative to the system file, kept
// inside its config tree like every file a system names) or a name, looked up as
// devices/<name>.toml in the system's own config tree, then in the caller's config roots.
std::string resolve_device(const std::string& dev, const std::string& path,
                           const std::string& where, const ConfigRoots& roots) {
  namespace fs = std::filesystem;
  if (dev.empty()) fail("{}: {}: key 'device' is empty", path, where);
  if (looks_like_path(dev)) return resolve(path, dev, "device");
  if (dev[0] == '.' || dev.find('\\') != std::string::npos) {
    fail("{}: {}: key 'device': '{}' is neither a device name nor a .toml path", path, where,
         printable(dev));
  }
  const std::string relative = "../devices/" + dev + ".toml";
  std::error_code ec;
  if (fs::is_regular_file(fs::path(path).parent_path() / relative, ec)) {
    return resolve(path, relative, "device");
  }
  if (const auto found = roots.find(fs::path("devices") / (dev + ".toml"))) return found->string();
  std::string list;
  for (const std::string& n : roots.names_in("devices", ".toml")) {
    list += (list.empty() ? "" : ", ") + n;
  }
  fail(
      "{}: {}: unknown device '{}' (no devices/{}.toml beside the system's folder or in the "
      "config roots {}); available: {}",
      path, where, printable(dev), printable(dev), roots.describe(), list.empty() ? "none" : list);
}

GpuSpec gpu_from_table(const toml::table& t, const std::string& path, const std::string& where,
                       const std::string& name) {
  GpuSpec g;
  g.name = name;
  g.dram_bandwidth_gbs = positive(t, "dram_bandwidth_gbs", path, where);
  g.peak_fp32_gflops = positive(t, "peak_fp32_gflops", path, where);
  g.launch_overhead_us = number(t, "launch_overhead_us", path, where, true);
  if (g.launch_overhead_us < 0 || g.launch_overhead_us > kMaxFigure) {
    fail("{}: {}: key 'launch_overhead_us' must lie in [0, {}]", path, where, kMaxFigure);
  }
  g.memory_gb = positive(t, "memory_gb", path, where, false, 80);
  return g;
}

Design gpu_design(const GpuSpec& spec) {
  Design d;
  d.id = "gpu:" + spec.name;
  d.type = "GPU";
  d.is_gpu = true;
  d.gpu = spec;
  d.dram_gb = spec.memory_gb;
  d.weight_fraction = 0.8;
  d.throughput_gops = spec.peak_fp32_gflops;
  d.dtype_bits = 32;
  d.supports = (1u << kLayerKinds) - 1;  // a GPU runs every layer kind
  d.power_w = 300;
  return d;
}

// [devices.cpu]: ranks running the CPU executor with `threads` threads each; `device`
// names the CPU's spec in configs/devices (default "cpu") for the roofline fallback.
Design cpu_rank_design(const toml::table& t, const std::string& path, const ConfigRoots& roots,
                       int& ranks) {
  const std::string where = "[devices.cpu]";
  reject_unknown_keys(t, {"ranks", "threads", "device", "memory_gb", "cores"}, path, where);
  ranks = integer(t, "ranks", path, where, 1, kMaxDevices, true, 1);
  const int threads = integer(t, "threads", path, where, 1, 1024, false, 1);
  const std::string device = text(t, "device", path, where, false, "cpu");
  Design d = gpu_design(load_gpu_spec(resolve_device(device, path, where, roots)));
  d.is_gpu = false;
  d.is_cpu = true;
  d.threads = static_cast<int>(threads);
  d.id = fmt::format("cpu:{}x{}", d.gpu.name, d.threads);
  d.type = "CPU";
  d.dram_gb = positive(t, "memory_gb", path, where, false, 16);
  d.weight_fraction = 1;
  d.power_w = 0;
  return d;
}

// A CPU cluster's message costs ([network.p2p], written by `orchid calibrate-net`;
// without it: no latency, the [bandwidth] figure) and the cores its ranks share.
CpuNetwork cpu_network(const toml::table& root, const toml::table& cpu, double gbs,
                       const std::string& path) {
  CpuNetwork net;
  net.gbs = gbs;
  net.cores = integer(cpu, "cores", path, "[devices.cpu]", 0, 1 << 20, false, 0);
  const toml::table* p2p = root["network"]["p2p"].as_table();
  if (p2p == nullptr) return net;
  net.gbs = positive(*p2p, "gbs", path, "[network.p2p]");
  const double latency_us = number(*p2p, "latency_us", path, "[network.p2p]", true);
  if (!(latency_us >= 0)) fail("{}: [network.p2p]: key 'latency_us' must not be negative", path);
  net.latency_s = latency_us * 1e-6;
  if (const toml::node* runner = root["network"].as_table()->get("runner")) {
    if (!runner->is_table()) fail("{}: [network.runner] must be a table", path);
    const toml::table& t = *runner->as_table();
    reject_unknown_keys(t, {"step_us", "gbs", "split_us"}, path, "[network.runner]");
    // The runner's own rate for a split layer's messages, when measured, prices them.
    if (t.get("gbs") != nullptr) net.gbs = positive(t, "gbs", path, "[network.runner]");
    // A time in microseconds, in [0, kMaxFigure], as seconds.
    const auto runner_seconds = [&](const char* key) {
      const double us = number(t, key, path, "[network.runner]", true);
      if (!(us >= 0 && us <= kMaxFigure)) {
        fail("{}: [network.runner]: key '{}' must lie in [0, {}]", path, key, kMaxFigure);
      }
      return us * 1e-6;
    };
    net.step_s = runner_seconds("step_us");
    if (t.get("split_us") != nullptr) net.split_s = runner_seconds("split_us");
  }
  return net;
}

}  // namespace

int System::design_index(const std::string& id) const {
  for (std::size_t i = 0; i < designs.size(); ++i) {
    if (designs[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

std::vector<Design> parse_design_library(const std::string& content, const std::string& path) {
  const toml::table root = parse_toml(content, path);
  reject_unknown_keys(root, {"design"}, path, "design library");
  const toml::array* list = root["design"].as_array();
  if (list == nullptr || list->empty()) fail("{}: no [[design]] tables", path);
  std::vector<Design> out;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const toml::table* t = list->get(i)->as_table();
    if (t == nullptr) fail("{}: design[{}] is not a table", path, i);
    Design d;
    d.id = text(*t, "id", path, fmt::format("design[{}]", i), true);
    const std::string where = fmt::format("design '{}'", printable(d.id));
    reject_unknown_keys(*t,
                        {"id", "type", "supports", "throughput_gops", "freq_mhz", "dram_gb",
                         "weight_fraction", "port_bits", "dtype_bits", "tiling", "power_w"},
                        path, where);
    for (const Design& other : out) {
      if (other.id == d.id) fail("{}: {}: duplicate design id", path, where);
    }
    d.type = text(*t, "type", path, where, true);
    if (d.type != "CNN" && d.type != "FC" && d.type != "LSTM") {
      fail("{}: {}: key 'type' must be CNN, FC or LSTM, got '{}'", path, where, d.type);
    }
    d.throughput_gops = positive(*t, "throughput_gops", path, where);
    d.freq_mhz = positive(*t, "freq_mhz", path, where);
    d.dram_gb = positive(*t, "dram_gb", path, where);
    d.weight_fraction = number(*t, "weight_fraction", path, where, true);
    if (d.weight_fraction < 0 || d.weight_fraction > 1) {
      fail("{}: {}: key 'weight_fraction' must lie in [0, 1]", path, where);
    }
    d.port_bits = integer(*t, "port_bits", path, where, 1, 1 << 20);
    d.dtype_bits = integer(*t, "dtype_bits", path, where, 1, 64, false, 32);
    d.power_w = number(*t, "power_w", path, where, false, 0);
    if (d.power_w < 0 || d.power_w > kMaxFigure) {
      fail("{}: {}: key 'power_w' must lie in [0, {}]", path, where, kMaxFigure);
    }
    if (t->contains("tiling") && !(*t)["tiling"].is_table()) {
      fail("{}: {}: key 'tiling' must be a table", path, where);
    }
    if (const toml::table* tiling = (*t)["tiling"].as_table()) {
      const std::string tw = where + " tiling";
      reject_unknown_keys(*tiling, {"tm", "tn", "tr", "tc", "tr_in", "tc_in"}, path, tw);
      constexpr int kMaxTile = 1 << 16;
      d.tm = integer(*tiling, "tm", path, tw, 1, kMaxTile);
      d.tn = integer(*tiling, "tn", path, tw, 1, kMaxTile);
      d.tr = integer(*tiling, "tr", path, tw, 1, kMaxTile);
      d.tc = integer(*tiling, "tc", path, tw, 1, kMaxTile);
      d.tr_in = integer(*tiling, "tr_in", path, tw, 1, kMaxTile, false, d.tr);
      d.tc_in = integer(*tiling, "tc_in", path, tw, 1, kMaxTile, false, d.tc);
    } else if (d.type == "CNN") {
      fail("{}: {}: a CNN design needs a 'tiling' table (tm, tn, tr, tc)", path, where);
    }
    const std::vector<std::string> kinds = strings(*t, "supports", path, where);
    if (kinds.empty())
      fail("{}: {}: key 'supports' must list at least one layer type", path, where);
    for (const std::string& k : kinds) {
      LayerKind kind;
      if (!parse_kind(k, kind)) {
        fail("{}: {}: key 'supports': unknown layer type '{}' (conv, fc, matmul, lstm, cheap)",
             path, where, k);
      }
      d.supports |= 1u << static_cast<int>(kind);
    }
    d.supports |= 1u << static_cast<int>(LayerKind::Cheap);  // any engine can move bytes
    out.push_back(d);
  }
  return out;
}

std::vector<Design> load_design_library(const std::string& path) {
  return parse_design_library(read_text(path, "design library"), path);
}

GpuSpec load_gpu_spec(const std::string& path) {
  // The full device file, checked key by key as `--device` checks it.
  const DeviceSpec device = parse_device_spec(read_text(path, "device spec"), path);
  GpuSpec spec;
  spec.name = std::filesystem::path(path).stem().string();
  spec.dram_bandwidth_gbs = device.dram_bandwidth_gbs;
  spec.peak_fp32_gflops = device.peak_fp32_gflops;
  spec.launch_overhead_us = device.launch_overhead_us;
  spec.spec_path = path;
  return spec;
}

double System::host_gbs_of(int device) const {
  return device_host_gbs.empty() ? host_gbs : device_host_gbs[static_cast<std::size_t>(device)];
}

const Link* System::link_between(int a, int b) const {
  for (const Link& l : links) {
    if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) return &l;
  }
  return nullptr;
}

std::string find_system(const std::string& name_or_path, const ConfigRoots& roots) {
  if (name_or_path.empty()) fail("--system: the name is empty");
  if (looks_like_path(name_or_path)) return name_or_path;
  if (const auto found = roots.find(std::filesystem::path("systems") / (name_or_path + ".toml"))) {
    return found->string();
  }
  std::string list;
  for (const std::string& n : roots.names_in("systems", ".toml")) {
    list += (list.empty() ? "" : ", ") + n;
  }
  fail("unknown system '{}' (no systems/{}.toml in the config roots {}); available: {}",
       printable(name_or_path), printable(name_or_path), roots.describe(),
       list.empty() ? "none" : list);
}

namespace {

// FPGA slots and GPUs ([devices] fpga, [[devices.gpu]]) with the design library.
void read_accelerators(const toml::table& root, const toml::table& devices_table,
                       const std::string& path, const ConfigRoots& roots, System& s) {
  const toml::table* devices = &devices_table;
  const std::string lib = text(root, "design_library", path, "system", true);
  std::vector<Design> library = load_design_library(resolve(path, lib, "design_library"));
  const std::vector<std::string> allowed = strings(root, "designs", path, "system");
  if (allowed.empty()) {
    s.designs = library;
  } else {
    for (const std::string& id : allowed) {
      bool found = false;
      for (const Design& d : library) {
        if (d.id == id) {
          s.designs.push_back(d);
          found = true;
        }
      }
      if (!found) fail("{}: key 'designs': unknown design '{}' (not in {})", path, id, lib);
    }
  }

  s.fpga_devices = integer(*devices, "fpga", path, "[devices]", 0, kMaxDevices);
  if (const toml::array* gpus = (*devices)["gpu"].as_array()) {
    for (std::size_t i = 0; i < gpus->size(); ++i) {
      const toml::table* g = gpus->get(i)->as_table();
      const std::string where = fmt::format("[[devices.gpu]] #{}", i + 1);
      if (g == nullptr) fail("{}: {} is not a table", path, where);
      reject_unknown_keys(*g, {"device", "spec", "name", "count"}, path, where);
      GpuSpec spec;
      if (const toml::table* inline_spec = (*g)["spec"].as_table()) {
        spec = gpu_from_table(*inline_spec, path, where + " spec",
                              text(*g, "name", path, where, false, fmt::format("gpu{}", i)));
      } else {
        const std::string dev = text(*g, "device", path, where, true);
        spec = load_gpu_spec(resolve_device(dev, path, where, roots));
      }
      const int copies = integer(*g, "count", path, where, 1, kMaxDevices, false, 1);
      if (static_cast<int>(s.gpu_designs.size()) + copies > kMaxDevices) {
        fail("{}: [devices]: more than {} GPUs", path, kMaxDevices);
      }
      int index = s.design_index("gpu:" + spec.name);
      if (index < 0) {
        s.designs.push_back(gpu_design(spec));
        index = static_cast<int>(s.designs.size()) - 1;
      }
      for (int c = 0; c < copies; ++c) s.gpu_designs.push_back(index);
    }
  }
  if (s.total_devices() == 0) fail("{}: [devices]: the system has no devices", path);
  if (s.fpga_devices > 0) {
    bool any_fpga = false;
    for (const Design& d : s.designs) any_fpga |= !d.is_gpu;
    if (!any_fpga) fail("{}: key 'designs': FPGA devices but no FPGA design", path);
  }
}

// [topology]: host_gbs per device, [[topology.link]] per device pair. Devices are numbered
// in system order: FPGA slots (or CPU ranks) first, then the GPUs as listed.
void read_topology(const toml::table& root, const std::string& path, System& s) {
  const toml::node* node = root.get("topology");
  if (node == nullptr) return;
  const toml::table* topo = node->as_table();
  if (topo == nullptr) fail("{}: key 'topology' must be a table", path);
  reject_unknown_keys(*topo, {"host_gbs", "link"}, path, "[topology]");
  const int n = s.total_devices();
  if (const toml::node* host = topo->get("host_gbs")) {
    const toml::array* list = host->as_array();
    if (list == nullptr || static_cast<int>(list->size()) != n) {
      fail("{}: [topology]: key 'host_gbs' must list one number per device ({} devices)", path, n);
    }
    for (std::size_t i = 0; i < list->size(); ++i) {
      const auto v = list->get(i)->value<double>();
      if (!list->get(i)->is_number() || !v || !(*v >= kMinFigure && *v <= kMaxFigure)) {
        fail("{}: [topology]: key 'host_gbs': device {} must be a number in [{}, {}]", path, i,
             kMinFigure, kMaxFigure);
      }
      s.device_host_gbs.push_back(*v);
    }
  }
  const toml::node* links = topo->get("link");
  if (links == nullptr) return;
  const toml::array* list = links->as_array();
  if (list == nullptr) fail("{}: [topology]: key 'link' must be an array of tables", path);
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string where = fmt::format("[[topology.link]] #{}", i + 1);
    const toml::table* t = list->get(i)->as_table();
    if (t == nullptr) fail("{}: {} is not a table", path, where);
    reject_unknown_keys(*t, {"devices", "gbs", "latency_us"}, path, where);
    const toml::array* pair = (*t)["devices"].as_array();
    if (pair == nullptr || pair->size() != 2) {
      fail("{}: {}: key 'devices' must be a pair of device indices, e.g. [0, 1]", path, where);
    }
    Link link;
    int* ends[2] = {&link.a, &link.b};
    for (std::size_t e = 0; e < 2; ++e) {
      const auto v = pair->get(e)->value_exact<std::int64_t>();
      if (!v || *v < 0 || *v >= n) {
        fail("{}: {}: key 'devices': {} is not a device index in [0, {}]", path, where,
             e == 0 ? "the first" : "the second", n - 1);
      }
      *ends[e] = static_cast<int>(*v);
    }
    if (link.a == link.b)
      fail("{}: {}: key 'devices': a link joins two different devices", path, where);
    if (s.link_between(link.a, link.b) != nullptr) {
      fail("{}: {}: devices {} and {} are linked twice", path, where, link.a, link.b);
    }
    link.gbs = positive(*t, "gbs", path, where);
    link.latency_us = number(*t, "latency_us", path, where, false, 0);
    if (link.latency_us < 0 || link.latency_us > kMaxFigure) {
      fail("{}: {}: key 'latency_us' must lie in [0, {}]", path, where, kMaxFigure);
    }
    s.links.push_back(link);
  }
}

}  // namespace

System parse_system(const std::string& content, const std::string& path, const ConfigRoots& roots) {
  const toml::table root = parse_toml(content, path);
  reject_unknown_keys(root,
                      {"name", "description", "design_library", "designs", "devices", "bandwidth",
                       "network", "options", "baseline", "topology"},
                      path, "system");
  System s;
  s.path = path;
  s.name = text(root, "name", path, "system", false, std::filesystem::path(path).stem().string());
  const toml::table* devices = root["devices"].as_table();
  if (devices == nullptr) fail("{}: missing table [devices]", path);
  reject_unknown_keys(*devices, {"fpga", "gpu", "cpu"}, path, "[devices]");
  if (const toml::node* cpu = devices->get("cpu")) {
    // A CPU cluster: no design library, every rank is the CPU executor.
    if (cpu->as_table() == nullptr) fail("{}: [devices]: key 'cpu' must be a table", path);
    for (const char* other : {"fpga", "gpu"}) {
      if (devices->get(other) != nullptr) {
        fail("{}: [devices]: key '{}' cannot be combined with a CPU cluster ([devices.cpu])", path,
             other);
      }
    }
    s.designs.push_back(cpu_rank_design(*cpu->as_table(), path, roots, s.cpu_ranks));
    s.fpga_devices = s.cpu_ranks;
    s.baseline_designs = {0};
  } else {
    read_accelerators(root, *devices, path, roots, s);
  }
  const toml::table* bw = root["bandwidth"].as_table();
  if (bw == nullptr) {
    fail("{}: missing table [bandwidth]{}", path,
         s.cpu_ranks > 0 ? fmt::format(" (write it with `orchid calibrate-net --system {}`)", path)
                         : "");
  }
  reject_unknown_keys(*bw, {"intra_group_gbs", "inter_group_gbs", "host_gbs", "route_via_host"},
                      path, "[bandwidth]");
  s.intra_group_gbs = positive(*bw, "intra_group_gbs", path, "[bandwidth]");
  s.inter_group_gbs = positive(*bw, "inter_group_gbs", path, "[bandwidth]");
  s.host_gbs = positive(*bw, "host_gbs", path, "[bandwidth]");
  if (const toml::node* n = bw->get("route_via_host")) {
    auto v = n->value<bool>();
    if (!v) fail("{}: [bandwidth]: key 'route_via_host' must be true or false", path);
    s.route_via_host = *v;
  }
  // [network]: the fits `orchid calibrate-net` records beside [bandwidth] (which is what
  // the evaluator uses); checked like every other figure, read by no search.
  if (const toml::node* n = root.get("network")) {
    const toml::table* net = n->as_table();
    if (net == nullptr) fail("{}: key 'network' must be a table", path);
    reject_unknown_keys(*net,
                        {"ranks", "p2p", "allreduce", "allgather", "reduce_scatter", "runner"},
                        path, "[network]");
    integer(*net, "ranks", path, "[network]", 1, kMaxDevices, false, 1);
    for (const char* kind : {"p2p", "allreduce", "allgather", "reduce_scatter"}) {
      const toml::node* fit = net->get(kind);
      if (fit == nullptr) continue;
      const std::string where = fmt::format("[network.{}]", kind);
      if (!fit->is_table()) fail("{}: {} must be a table", path, where);
      const toml::table& t = *fit->as_table();
      reject_unknown_keys(t, {"gbs", "latency_us", "rms_relative_error"}, path, where);
      positive(t, "gbs", path, where);
      if (number(t, "latency_us", path, where, true) < 0) {
        fail("{}: {}: key 'latency_us' must not be negative", path, where);
      }
      if (number(t, "rms_relative_error", path, where, false) < 0) {
        fail("{}: {}: key 'rms_relative_error' must not be negative", path, where);
      }
    }
  }
  if (s.cpu_ranks > 0) {
    s.cpu_network = cpu_network(root, *devices->get("cpu")->as_table(), s.intra_group_gbs, path);
  }
  read_topology(root, path, s);
  if (const toml::table* opt = root["options"].as_table()) {
    reject_unknown_keys(*opt, {"overlap"}, path, "[options]");
    if (const toml::node* n = opt->get("overlap")) {
      auto v = n->value<bool>();
      if (!v) fail("{}: [options]: key 'overlap' must be true or false", path);
      s.overlap = *v;
    }
  }
  std::vector<std::string> baseline;
  if (const toml::table* b = root["baseline"].as_table()) {
    reject_unknown_keys(*b, {"designs"}, path, "[baseline]");
    baseline = strings(*b, "designs", path, "[baseline]");
  }
  for (const std::string& id : baseline) {
    const int index = s.design_index(id);
    if (index < 0) fail("{}: [baseline]: key 'designs': unknown design '{}'", path, id);
    if (s.designs[index].is_gpu) fail("{}: [baseline]: key 'designs': '{}' is a GPU", path, id);
    s.baseline_designs.push_back(index);
  }
  if (s.baseline_designs.empty()) {
    for (std::size_t i = 0; i < s.designs.size(); ++i) {
      if (!s.designs[i].is_gpu) s.baseline_designs.push_back(static_cast<int>(i));
    }
  }
  return s;
}

System load_system(const std::string& path, const ConfigRoots& roots) {
  return parse_system(read_text(path, "system"), path, roots);
}

}  // namespace orchid::mapping
