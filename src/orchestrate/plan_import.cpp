#include "orchestrate/plan_import.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "fission/kernel_view.hpp"
#include "util/checked_math.hpp"
#include "util/error.hpp"
#include "util/memory_budget.hpp"

namespace orchid {

namespace {

using nlohmann::json;

// Typed access to the plan's fields: a missing field or one of the wrong type is an
// error naming it, never a json exception.
class Fields {
 public:
  explicit Fields(const std::string& source) : source_(source) {}

  const json& get(const json& object, const char* key, const std::string& where) const {
    if (!object.is_object()) bad(where, "is not a JSON object");
    auto it = object.find(key);
    if (it == object.end()) bad(where, fmt::format("has no '{}'", key));
    return *it;
  }
  const json& array(const json& object, const char* key, const std::string& where) const {
    const json& v = get(object, key, where);
    if (!v.is_array()) bad(where, fmt::format("'{}' is not an array", key));
    return v;
  }
  std::string string(const json& v, const std::string& where) const {
    if (!v.is_string()) bad(where, "is not a string");
    return v.get<std::string>();
  }
  std::int64_t integer(const json& v, const std::string& where, std::int64_t lo,
                       std::int64_t hi) const {
    std::int64_t out = 0;
    if (v.is_number_unsigned()) {
      const auto u = v.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) bad(where, "is out of range");
      out = static_cast<std::int64_t>(u);
    } else if (v.is_number_integer()) {
      out = v.get<std::int64_t>();
    } else {
      bad(where, "is not an integer");
    }
    if (out < lo || out > hi) bad(where, fmt::format("{} is outside [{}, {}]", out, lo, hi));
    return out;
  }
  double number(const json& v, const std::string& where) const {
    if (!v.is_number()) bad(where, "is not a number");
    const double out = v.get<double>();
    if (!std::isfinite(out) || out < 0) bad(where, "must be a finite non-negative number");
    return out;
  }
  std::vector<std::string> strings(const json& object, const char* key,
                                   const std::string& where) const {
    std::vector<std::string> out;
    const json& list = array(object, key, where);
    for (std::size_t i = 0; i < list.size(); ++i) {
      out.push_back(string(list[i], fmt::format("{} '{}'[{}]", where, key, i)));
    }
    return out;
  }
  [[noreturn]] void bad(const std::string& where, const std::string& what) const {
    fail("{}: {} {}", source_, where, what);
  }

 private:
  const std::string& source_;
};

// A kernel's interface as the orchestrator computes it (PrimitiveGraphIndex::view, with
// the alternatives exported), from consumer lists built once: validating a plan of K
// kernels costs O(K x kernel size), not O(K x graph size).
class KernelInterfaces {
 public:
  KernelInterfaces(const Graph& g, const std::map<std::string, std::string>& alternatives) : g_(g) {
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
      for (const auto& t : g.nodes[i].outputs) {
        if (!t.empty()) producer_[t] = i;
      }
      for (const auto& t : g.nodes[i].inputs) {
        if (!t.empty()) consumers_[t].push_back(i);
      }
    }
    for (const auto& [alt, target] : alternatives) exported_.insert(alt);
    for (const auto& out : g.outputs) exported_.insert(out);
  }

  // `nodes` sorted and unique.
  std::pair<std::vector<std::string>, std::vector<std::string>> of(
      const std::vector<std::size_t>& nodes) const {
    auto member = [&](std::size_t i) { return std::binary_search(nodes.begin(), nodes.end(), i); };
    std::vector<std::string> inputs, outputs;
    std::unordered_set<std::string> seen;
    for (std::size_t i : nodes) {
      for (const auto& t : g_.nodes[i].inputs) {
        if (t.empty() || !seen.insert(t).second) continue;
        auto p = producer_.find(t);
        if (p != producer_.end() && member(p->second)) continue;
        inputs.push_back(t);
      }
    }
    for (std::size_t i : nodes) {
      for (const auto& t : g_.nodes[i].outputs) {
        if (t.empty()) continue;
        bool needed = exported_.count(t) != 0;
        if (auto c = consumers_.find(t); !needed && c != consumers_.end()) {
          needed = std::any_of(c->second.begin(), c->second.end(),
                               [&](std::size_t j) { return !member(j); });
        }
        if (needed) outputs.push_back(t);
      }
    }
    return {inputs, outputs};
  }

 private:
  const Graph& g_;
  std::unordered_map<std::string, std::size_t> producer_;
  std::unordered_map<std::string, std::vector<std::size_t>> consumers_;
  std::unordered_set<std::string> exported_;
};

bool is_source_for(const std::string& source, const std::string& input,
                   const std::map<std::string, std::string>& alternatives) {
  if (source == input) return true;
  auto it = alternatives.find(source);
  return it != alternatives.end() && it->second == input;
}

}  // namespace

Plan plan_from_json(const std::string& text, const Graph& primitives,
                    const std::map<std::string, std::string>& alternatives,
                    const std::string& source, std::string* device) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail("{}: not valid JSON", source);
  const Fields f(source);
  if (!j.is_object() || !j.contains("format") || j["format"] != "orchid-plan") {
    fail("{}: not an orchid plan (no \"format\": \"orchid-plan\")", source);
  }
  const json& prims = f.array(j, "primitives", "the plan");
  const std::size_t n = std::min(prims.size(), primitives.nodes.size());
  auto prim_name = [&](std::size_t i) {
    return f.string(f.get(prims[i], "name", fmt::format("primitive {}", i)),
                    fmt::format("primitive {} 'name'", i));
  };
  for (std::size_t i = 0; i < n; ++i) {
    const std::string name = prim_name(i);
    if (name != primitives.nodes[i].name) {
      fail("{}: primitive {} differs: the plan has '{}', fission of the model gives '{}'", source,
           i, name, primitives.nodes[i].name);
    }
  }
  if (prims.size() != primitives.nodes.size()) {
    fail("{}: the plan has {} primitives, fission of the model gives {} (first missing: '{}')",
         source, prims.size(), primitives.nodes.size(),
         prims.size() > n ? prim_name(n) : primitives.nodes[n].name);
  }
  Plan plan;
  if (j.contains("kind")) plan.kind = f.string(j["kind"], "'kind'");
  if (device != nullptr) *device = j.contains("device") ? f.string(j["device"], "'device'") : "";
  plan.arena_bytes = f.integer(f.get(j, "arena_bytes", "the plan"), "'arena_bytes'", 0, INT64_MAX);
  if (j.contains("weight_bytes")) {
    plan.weight_bytes = f.integer(j["weight_bytes"], "'weight_bytes'", 0, INT64_MAX);
  }
  const json& kernels = f.array(j, "kernels", "the plan");
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    const std::string where = fmt::format("kernel {}", k);
    const json& kj = kernels[k];
    PlannedKernel pk;
    const json& nodes = f.array(kj, "primitives", where);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      pk.nodes.push_back(static_cast<std::size_t>(
          f.integer(nodes[i], fmt::format("{} 'primitives'[{}]", where, i), 0,
                    static_cast<std::int64_t>(primitives.nodes.size()) - 1)));
    }
    pk.inputs = f.strings(kj, "inputs", where);
    pk.sources = f.strings(kj, "sources", where);
    pk.outputs = f.strings(kj, "outputs", where);
    if (kj.contains("cost_us")) pk.cost_us = f.number(kj["cost_us"], where + " 'cost_us'");
    plan.total_us += pk.cost_us;
    plan.kernels.push_back(std::move(pk));
  }
  const json& arena = f.array(j, "arena", "the plan");
  for (std::size_t i = 0; i < arena.size(); ++i) {
    const std::string where = fmt::format("arena slot {}", i);
    const json& a = arena[i];
    ArenaSlot s;
    s.tensor = f.string(f.get(a, "tensor", where), where + " 'tensor'");
    s.offset = f.integer(f.get(a, "offset", where), where + " 'offset'", 0, INT64_MAX);
    s.bytes = f.integer(f.get(a, "bytes", where), where + " 'bytes'", 0, INT64_MAX);
    // Lifetimes are recomputed from the kernels (validate_plan); these are informative.
    if (a.contains("first_kernel")) {
      s.first_kernel = static_cast<std::size_t>(
          f.integer(a["first_kernel"], where + " 'first_kernel'", 0, INT64_MAX));
    }
    if (a.contains("last_kernel")) {
      s.last_kernel = static_cast<std::size_t>(
          f.integer(a["last_kernel"], where + " 'last_kernel'", 0, INT64_MAX));
    }
    plan.arena.push_back(std::move(s));
  }
  validate_plan(plan, primitives, alternatives, source);
  return plan;
}

void validate_plan(const Plan& plan, const Graph& g,
                   const std::map<std::string, std::string>& alternatives,
                   const std::string& source) {
  const std::unordered_set<std::string> graph_inputs(g.inputs.begin(), g.inputs.end());
  auto is_given = [&](const std::string& t) { return graph_inputs.count(t) || g.is_constant(t); };

  // Kernels: their node sets, interfaces and order.
  const KernelInterfaces interfaces(g, alternatives);
  std::unordered_map<std::string, std::size_t> first_writer;
  std::unordered_map<std::string, std::size_t> last_reader;
  for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
    const PlannedKernel& pk = plan.kernels[k];
    const std::string where = fmt::format("{}: kernel {}", source, k);
    if (pk.nodes.empty()) fail("{} has no primitives", where);
    for (std::size_t i = 0; i < pk.nodes.size(); ++i) {
      if (pk.nodes[i] >= g.nodes.size())
        fail("{} names primitive {}, which does not exist", where, pk.nodes[i]);
      if (i > 0 && pk.nodes[i] <= pk.nodes[i - 1]) {
        fail("{}: its primitives must be listed once each, in increasing order", where);
      }
    }
    const auto [inputs, outputs] = interfaces.of(pk.nodes);
    if (inputs != pk.inputs || outputs != pk.outputs) {
      fail("{}: its inputs/outputs are not those of its primitives", where);
    }
    if (pk.sources.size() != pk.inputs.size()) {
      fail("{} has {} sources for {} inputs", where, pk.sources.size(), pk.inputs.size());
    }
    for (std::size_t i = 0; i < pk.inputs.size(); ++i) {
      const std::string& src = pk.sources[i];
      if (!is_source_for(src, pk.inputs[i], alternatives)) {
        fail("{} reads '{}' for input '{}', which is neither it nor an equal alternative", where,
             src, pk.inputs[i]);
      }
      if (is_given(src)) continue;
      if (!first_writer.count(src)) {
        fail("{} reads '{}' before any kernel writes it (kernels out of order, or missing)", where,
             src);
      }
      last_reader[src] = k;
    }
    for (const auto& t : pk.outputs) {
      first_writer.try_emplace(t, k);
      // A later kernel recomputing t writes its slot again: t lives until then too.
      last_reader[t] = std::max(last_reader[t], k);
    }
  }
  for (const auto& out : g.outputs) {
    if (!is_given(out) && !first_writer.count(out)) {
      fail("{}: graph output '{}' is not produced by any kernel", source, out);
    }
    if (first_writer.count(out)) last_reader[out] = plan.kernels.size();
  }

  // Arena: one slot per written tensor, large enough, inside, and no two live at once
  // share bytes (lifetimes recomputed from the kernels, not taken from the file).
  if (plan.arena_bytes < 0) fail("{}: arena_bytes is negative", source);
  check_memory_budget(plan.arena_bytes, source + ": the plan's arena");
  struct Live {
    std::size_t from, to;
    std::int64_t lo, hi;
    const std::string* tensor;
  };
  std::vector<Live> live;
  std::unordered_set<std::string> slotted;
  for (const ArenaSlot& s : plan.arena) {
    const std::string where = fmt::format("{}: arena slot of '{}'", source, s.tensor);
    auto writer = first_writer.find(s.tensor);
    if (writer == first_writer.end()) fail("{}: no kernel writes that tensor", where);
    if (!slotted.insert(s.tensor).second) fail("{} is listed twice", where);
    if (!g.has_tensor(s.tensor)) fail("{}: the model has no such tensor", where);
    if (s.offset < 0 || s.bytes < 0) fail("{}: negative offset or size", where);
    const std::int64_t need = tensor_bytes(g, s.tensor);
    if (s.bytes < need) fail("{} has {} bytes; the tensor needs {}", where, s.bytes, need);
    const auto end = add_no_overflow(s.offset, s.bytes);
    if (!end || *end > plan.arena_bytes) {
      fail("{} (offset {}, {} bytes) lies outside the {}-byte arena", where, s.offset, s.bytes,
           plan.arena_bytes);
    }
    const auto reader = last_reader.find(s.tensor);
    live.push_back({writer->second, reader == last_reader.end() ? writer->second : reader->second,
                    s.offset, *end, &s.tensor});
  }
  for (const auto& [t, k] : first_writer) {
    if (!is_given(t) && !slotted.count(t)) fail("{}: tensor '{}' has no arena slot", source, t);
  }
  std::sort(live.begin(), live.end(), [](const Live& a, const Live& b) { return a.from < b.from; });
  for (std::size_t i = 0; i < live.size(); ++i) {
    for (std::size_t j = i + 1; j < live.size() && live[j].from <= live[i].to; ++j) {
      const bool share = live[i].lo < live[j].hi && live[j].lo < live[i].hi;
      if (share && live[i].hi > live[i].lo && live[j].hi > live[j].lo) {
        fail("{}: arena slots of '{}' and '{}' overlap while both are live", source,
             *live[i].tensor, *live[j].tensor);
      }
    }
  }
}

}  // namespace orchid
