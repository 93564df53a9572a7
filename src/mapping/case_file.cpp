// The case-file parser.
#include "mapping/case_file.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "cost/toml_keys.hpp"
#include "util/error.hpp"
#include "util/printable.hpp"
#include "util/safe_file.hpp"

namespace orchid::mapping {

int h2h_layer_index(const std::string& name, int fallback) {
  const auto pos = name.rfind('L');
  if (pos == std::string::npos || pos + 1 >= name.size()) return fallback;
  // Leading digits after the 'L' (a name like "M1Lx" keeps the fallback).
  int value = 0;
  const char* first = name.data() + pos + 1;
  const auto [end, ec] = std::from_chars(first, name.data() + name.size(), value);
  return ec == std::errc() && end != first ? value : fallback;
}

namespace {

// Layer dimensions: positive integers up to kMaxDim (padding P may be 0), the cheap
// work count up to kMaxElems, so every product the cost models form stays finite.
constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;
constexpr std::int64_t kMaxElems = std::int64_t{1} << 48;
constexpr std::size_t kMaxLayers = 100000;

std::int64_t get_int(const toml::table& t, const char* key, const std::string& path,
                     const std::string& where, std::int64_t fallback, bool required) {
  const toml::node* node = t.get(key);
  if (node == nullptr) {
    if (required) fail("{}: {}: missing key '{}'", path, where, key);
    return fallback;
  }
  auto v = node->value_exact<std::int64_t>();
  if (!v) fail("{}: {}: key '{}' must be an integer", path, where, key);
  const std::int64_t lo = std::string(key) == "P" ? 0 : 1;
  const std::int64_t hi = std::string(key) == "elems" ? kMaxElems : kMaxDim;
  if (*v < lo || *v > hi) {
    fail("{}: {}: key '{}' must be an integer in [{}, {}], got {}", path, where, key, lo, hi, *v);
  }
  return *v;
}

// A string key: `fallback` when absent, an error when present but not a string.
std::string get_string(const toml::table& t, const char* key, const std::string& path,
                       const std::string& where, const std::string& fallback) {
  const toml::node* node = t.get(key);
  if (node == nullptr) return fallback;
  auto v = node->value<std::string>();
  if (!v) fail("{}: {}: key '{}' must be a string", path, where, key);
  return *v;
}

Layer parse_layer(const toml::table& lt, const std::string& path, const std::string& where,
                  int modality, int index, std::int64_t batch) {
  reject_unknown_keys(
      lt,
      {"name", "type", "M", "N", "R", "C", "K", "S", "P", "G", "Hidden", "Dimen", "Iter", "elems"},
      path, where);
  Layer l;
  l.batch = batch;
  l.modality = modality;
  l.index = index;
  l.name = get_string(lt, "name", path, where, fmt::format("M{}L{}", modality, index));
  l.index = h2h_layer_index(l.name, l.index);
  const std::string type = get_string(lt, "type", path, where, "");
  if (!parse_kind(type, l.kind)) {
    fail("{}: {} ('{}'): key 'type': unsupported layer type '{}' (conv, fc, matmul, lstm, cheap)",
         path, where, printable(l.name), printable(type));
  }
  switch (l.kind) {
    case LayerKind::Conv:
      l.m = get_int(lt, "M", path, where, 1, true);
      l.n = get_int(lt, "N", path, where, 1, true);
      l.r = get_int(lt, "R", path, where, 1, true);
      l.c = get_int(lt, "C", path, where, 1, true);
      l.k = get_int(lt, "K", path, where, 1, true);
      l.s = get_int(lt, "S", path, where, 1, false);
      l.p = get_int(lt, "P", path, where, 0, false);
      break;
    case LayerKind::Fc:
      l.m = get_int(lt, "M", path, where, 1, true);
      l.n = get_int(lt, "N", path, where, 1, true);
      l.k = get_int(lt, "K", path, where, 1, false);
      break;
    case LayerKind::MatMul:
      l.g = get_int(lt, "G", path, where, 1, false);
      l.m = get_int(lt, "M", path, where, 1, true);
      l.n = get_int(lt, "N", path, where, 1, true);
      l.k = get_int(lt, "K", path, where, 1, true);
      break;
    case LayerKind::Lstm:
      l.hidden = get_int(lt, "Hidden", path, where, 1, true);
      l.dimen = get_int(lt, "Dimen", path, where, 1, true);
      l.iter = get_int(lt, "Iter", path, where, 1, true);
      break;
    case LayerKind::Cheap:
      l.elems = get_int(lt, "elems", path, where, 1, true);
      break;
  }
  return l;
}

}  // namespace

Workload parse_case(const std::string& content, const std::string& path, std::int64_t batch) {
  toml::table root;
  try {
    root = toml::parse(content, path);
  } catch (const toml::parse_error& e) {
    fail("{}:{}: TOML syntax error: {}", path, e.source().begin.line, e.description());
  }
  if (batch < 1 || batch > kMaxDim)
    fail("{}: batch must lie in [1, {}], got {}", path, kMaxDim, batch);
  reject_unknown_keys(root, {"name", "description", "modality", "edge"}, path, "workload");
  Workload w;
  w.name = get_string(root, "name", path, "top level", std::filesystem::path(path).stem().string());
  w.batch = batch;
  const toml::array* mods = root["modality"].as_array();
  if (mods == nullptr || mods->empty()) {
    fail("{}: key 'modality': no [[modality]] tables", path);
  }
  std::unordered_map<std::string, int> by_name;
  for (std::size_t mi = 0; mi < mods->size(); ++mi) {
    const toml::table* mt = mods->get(mi)->as_table();
    if (mt == nullptr) fail("{}: key 'modality': modality[{}] is not a table", path, mi);
    reject_unknown_keys(*mt, {"name", "layers"}, path, fmt::format("modality[{}]", mi + 1));
    const toml::array* layers = (*mt)["layers"].as_array();
    if (layers == nullptr) fail("{}: modality[{}]: missing key 'layers'", path, mi);
    int prev = -1;
    for (std::size_t li = 0; li < layers->size(); ++li) {
      const toml::table* lt = layers->get(li)->as_table();
      const std::string where = fmt::format("modality[{}] layer {}", mi + 1, li + 1);
      if (lt == nullptr) fail("{}: {}: key 'layers': entry is not a table", path, where);
      if (w.layers.size() >= kMaxLayers) fail("{}: more than {} layers", path, kMaxLayers);
      Layer l =
          parse_layer(*lt, path, where, static_cast<int>(mi) + 1, static_cast<int>(li) + 1, batch);
      if (by_name.count(l.name)) {
        fail("{}: {}: key 'name': duplicate layer name '{}'", path, where, printable(l.name));
      }
      const int id = static_cast<int>(w.layers.size());
      if (prev >= 0) l.preds.push_back(prev);
      by_name[l.name] = id;
      w.layers.push_back(l);
      prev = id;
    }
  }
  if (const toml::node* edge_node = root.get("edge")) {
    const toml::array* edges = edge_node->as_array();
    if (edges == nullptr) fail("{}: key 'edge' must be an array of tables ([[edge]])", path);
    for (std::size_t i = 0; i < edges->size(); ++i) {
      const toml::table* e = edges->get(i)->as_table();
      const std::string where = fmt::format("edge[{}]", i);
      if (e == nullptr) fail("{}: key 'edge': {} is not a table", path, where);
      reject_unknown_keys(*e, {"from", "to"}, path, where);
      const std::string from = get_string(*e, "from", path, where, "");
      const std::string to = get_string(*e, "to", path, where, "");
      if (!by_name.count(from)) {
        fail("{}: {}: key 'from': unknown layer '{}'", path, where, printable(from));
      }
      if (!by_name.count(to)) {
        fail("{}: {}: key 'to': unknown layer '{}'", path, where, printable(to));
      }
      w.layers[by_name[to]].preds.push_back(by_name[from]);
    }
  }
  w.link();
  return w;
}

Workload load_case_file(const std::string& path, std::int64_t batch) {
  return parse_case(read_regular_file(path, std::int64_t{16} << 20, "workload file"), path, batch);
}

}  // namespace orchid::mapping
