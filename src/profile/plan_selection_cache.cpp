#include "profile/plan_selection_cache.hpp"

#include <cstdint>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "profile/cpu_environment.hpp"
#include "profile/profile_db.hpp"
#include "util/atomic_file.hpp"
#include "util/random.hpp"
#include "util/safe_file.hpp"

namespace orchid {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFormat = "orchid-plan-choices";
constexpr int kFormatVersion = 1;
constexpr std::int64_t kMaxCacheBytes = std::int64_t{64} << 20;

std::uint64_t fnv1a64_update(std::uint64_t h, const char* data, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 0x100000001b3ull;
  }
  return h;
}

// Entries are keyed by model, ISA and threads; the rest of the key is checked inside.
std::string entry_name(const PlanSelectionKey& key) {
  return fmt::format("{}|{}|{}", key.model, key.isa, key.threads);
}

json read_cache(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return json::object();
  try {
    json j = json::parse(read_regular_file(path, kMaxCacheBytes, "plan choice cache"), nullptr,
                         /*allow_exceptions=*/false);
    if (j.is_object() && j.value("format", "") == kFormat &&
        j.value("version", 0) == kFormatVersion && j.contains("entries") &&
        j["entries"].is_object()) {
      return j;
    }
  } catch (const std::exception&) {
  }
  return json::object();
}

}  // namespace

std::string model_content_hash(const std::string& model_path, const std::string& shapes) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  std::error_code ec;
  std::ifstream in;
  if (fs::is_regular_file(model_path, ec)) in.open(model_path, std::ios::binary);
  if (in) {
    std::vector<char> chunk(std::size_t{1} << 20);
    while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
      h = fnv1a64_update(h, chunk.data(), static_cast<std::size_t>(in.gcount()));
    }
  } else {
    h = fnv1a64_update(h, model_path.data(), model_path.size());
  }
  h = fnv1a64_update(h, shapes.data(), shapes.size());
  return fmt::format("{:016x}", h);
}

std::string candidates_hash(const std::vector<const Plan*>& candidates) {
  std::string text;
  for (const Plan* p : candidates) {
    text += p->kind + ":";
    for (const auto& k : p->kernels) {
      for (std::size_t n : k.nodes) text += fmt::format("{},", n);
      text += ";";
    }
    text += "|";
  }
  return fmt::format("{:016x}", fnv1a64(text));
}

std::string default_plan_choice_path(const std::string& device) {
  const fs::path db = default_profile_db_path(device);
  std::string file = db.filename().string();
  if (file.rfind("profile-", 0) == 0) file = file.substr(8);
  return (db.parent_path() / ("plan-choices-" + file)).string();
}

std::optional<CachedPlanChoice> find_plan_choice(const std::string& path,
                                                 const PlanSelectionKey& key) {
  const json cache = read_cache(path);
  if (!cache.contains("entries")) return std::nullopt;
  const auto it = cache["entries"].find(entry_name(key));
  if (it == cache["entries"].end() || !it->is_object()) return std::nullopt;
  const json& e = *it;
  if (e.value("candidates", "") != key.candidates || e.value("settings", "") != key.settings ||
      !e.contains("chosen") || !e["chosen"].is_string()) {
    return std::nullopt;
  }
  CachedPlanChoice out;
  out.chosen = e["chosen"].get<std::string>();
  if (e.contains("trials") && e["trials"].is_array()) {
    for (const json& t : e["trials"]) {
      if (!t.is_object()) continue;
      PlanTrial trial;
      trial.kind = t.value("kind", "");
      trial.predicted_ms = t.value("predicted_ms", 0.0);
      trial.median_ms = t.value("median_ms", 0.0);
      trial.cv = t.value("cv", 0.0);
      out.trials.push_back(trial);
    }
  }
  return out;
}

bool store_plan_choice(const std::string& path, const PlanSelectionKey& key,
                       const PlanSelection& selection) {
  try {
    json cache = read_cache(path);
    if (!cache.contains("entries")) {
      cache = {{"format", kFormat}, {"version", kFormatVersion}, {"entries", json::object()}};
    }
    json trials = json::array();
    for (const PlanTrial& t : selection.trials) {
      trials.push_back({{"kind", t.kind},
                        {"predicted_ms", t.predicted_ms},
                        {"median_ms", t.median_ms},
                        {"cv", t.cv}});
    }
    cache["entries"][entry_name(key)] = {{"candidates", key.candidates},
                                         {"settings", key.settings},
                                         {"chosen", selection.trials[selection.fastest].kind},
                                         {"rounds", selection.rounds},
                                         {"trials", std::move(trials)}};
    const fs::path parent = fs::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) fs::create_directories(parent, ec);
    if (ec) return false;
    write_file_atomically(path, cache.dump(1) + "\n");
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

PlanChoice choose_fastest_plan(const std::string& model_path, const Graph& model_graph,
                               const FissionResult& fission,
                               const std::vector<const Plan*>& candidates, const TensorMap& feed,
                               const PlanChoiceOptions& options) {
  if (candidates.empty()) internal_error("choose_fastest_plan: no candidate plans");
  // The key: everything the answer depends on.
  std::string shapes;
  for (const auto& name : model_graph.inputs) {
    const TensorInfo& info = model_graph.tensor(name);
    shapes += fmt::format("{} {} {};", name, dtype_name(info.dtype), shape_to_string(info.shape));
  }
  PlanSelectionKey key;
  key.model = model_content_hash(model_path, shapes);
  key.candidates = candidates_hash(candidates);
  key.isa = effective_cpu_isa();
  key.threads = cpu_threads();
  // Whether threads spin changes which plan is fastest (many small kernels suffer most
  // from threads that sleep at once).
  key.settings = fmt::format("orchid {}; {} costs; k-best {}; select-seconds {}; threads {}",
                             ORCHID_VERSION, options.costs, options.k_best, options.budget_seconds,
                             openmp_threads_spin() ? "spin" : "sleep at once");
  PlanChoice out;
  try {
    out.cache = default_plan_choice_path("cpu");
  } catch (const Error&) {  // no HOME nor XDG_CACHE_HOME: no cache, time every run
  }
  if (!out.cache.empty() && !options.reselect) {
    if (auto cached = find_plan_choice(out.cache, key)) {
      for (const Plan* p : candidates) {
        if (p->kind != cached->chosen) continue;
        out.plan = p;
        out.reused = std::move(cached);
        return out;
      }
    }
  }
  PlanSelectionOptions so;
  so.budget_seconds = options.budget_seconds;
  so.packing = options.packing;
  out.selection = select_fastest_plan(fission.graph, fission.alternatives, candidates, feed, so);
  out.plan = candidates[out.selection.fastest];
  if (!out.cache.empty()) out.stored = store_plan_choice(out.cache, key, out.selection);
  return out;
}

}  // namespace orchid
