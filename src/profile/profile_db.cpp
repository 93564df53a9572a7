#include "profile/profile_db.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cost/kernel_signature.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/safe_file.hpp"

namespace orchid {

namespace fs = std::filesystem;

namespace {

using nlohmann::json;

double number_at(const json& entry, const std::string& path, const std::string& where,
                 const char* key) {
  auto it = entry.find(key);
  if (it == entry.end()) fail("{}: key '{}.{}' is missing", path, where, key);
  if (!it->is_number()) fail("{}: key '{}.{}' must be a number", path, where, key);
  return it->get<double>();
}

// Entries of the file at `path` ({} if it does not exist).
std::map<std::uint64_t, ProfileEntry> read_entries(const std::string& path, double max_spread,
                                                   const std::string& device) {
  std::map<std::uint64_t, ProfileEntry> entries;
  std::error_code ec;
  if (!fs::exists(path, ec)) return entries;
  const std::string text = read_regular_file(path, std::int64_t{1} << 30, "profile database");
  json j;
  j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    fail("profile database '{}' is not valid JSON; delete it or choose another database file",
         path);
  }
  if (!j.is_object() || !j.contains("format") || j["format"] != "orchid-profile-db") {
    fail("'{}' is not an orchid profile database (key 'format' must be \"orchid-profile-db\")",
         path);
  }
  if (!j.contains("version") || !j["version"].is_number_integer()) {
    fail("{}: key 'version' is missing or not an integer", path);
  }
  const int version = j["version"].get<int>();
  if (version != ProfileDb::kFormatVersion) {
    fail("{}: format version {} (this orchid reads version {}); delete the file to re-profile",
         path, version, ProfileDb::kFormatVersion);
  }
  if (!j.contains("device") || !j["device"].is_string()) {
    fail("{}: key 'device' is missing or not a string", path);
  }
  if (j["device"].get<std::string>() != device) {
    fail("{}: measurements for device '{}', not '{}'", path, j["device"].get<std::string>(),
         device);
  }
  if (!j.contains("entries") || !j["entries"].is_object()) {
    fail("{}: key 'entries' is missing or not an object", path);
  }
  for (const auto& [key, value] : j["entries"].items()) {
    const std::string where = "entries." + key;
    if (key.size() != 16 || key.find_first_not_of("0123456789abcdef") != std::string::npos) {
      fail("{}: key '{}' is not a 16-digit hex kernel signature", path, where);
    }
    if (!value.is_object()) fail("{}: key '{}' must be an object", path, where);
    ProfileEntry e;
    e.timer_version = static_cast<int>(number_at(value, path, where, "timer"));
    e.kernel = value.contains("kernel") && value["kernel"].is_string()
                   ? value["kernel"].get<std::string>()
                   : "";
    if (value.contains("error")) {
      if (!value["error"].is_string() || value["error"].get<std::string>().empty()) {
        fail("{}: key '{}.error' must be a non-empty string", path, where);
      }
      e.error = value["error"].get<std::string>();
    } else if (value.contains("median_us") || !value.contains("context_us")) {
      e.median_us = number_at(value, path, where, "median_us");
      e.p10_us = number_at(value, path, where, "p10_us");
      e.p90_us = number_at(value, path, where, "p90_us");
      e.reps = static_cast<int>(number_at(value, path, where, "reps"));
      if (!(e.median_us > 0) || e.reps < 1) {
        fail("{}: key '{}' needs median_us > 0 and reps >= 1", path, where);
      }
    }
    if (value.contains("context_us")) {
      e.context_us = number_at(value, path, where, "context_us");
      e.context_reps = static_cast<int>(number_at(value, path, where, "context_reps"));
      e.context_spread = number_at(value, path, where, "context_spread");
      if (!(e.context_us > 0) || e.context_reps < 1) {
        fail("{}: key '{}' needs context_us > 0 and context_reps >= 1", path, where);
      }
    }
    if (e.too_noisy(max_spread)) continue;  // stored by an older orchid: measured again
    entries.emplace(std::stoull(key, nullptr, 16), std::move(e));
  }
  return entries;
}

}  // namespace

ProfileDb::ProfileDb(std::string path, std::string device, double max_spread)
    : path_(std::move(path)), device_(std::move(device)), max_spread_(max_spread) {}

ProfileDb ProfileDb::open(const std::string& path, const std::string& device, double max_spread) {
  ProfileDb db(path, device, max_spread);
  db.entries_ = read_entries(path, max_spread, device);
  return db;
}

const ProfileEntry* ProfileDb::find(std::uint64_t signature) const {
  auto it = entries_.find(signature);
  return it == entries_.end() ? nullptr : &it->second;
}

bool ProfileDb::put(std::uint64_t signature, ProfileEntry entry) {
  if (entry.too_noisy(max_spread_)) return false;
  entries_[signature] = std::move(entry);
  dirty_ = true;
  return true;
}

std::string ProfileDb::to_json() const {
  json entries = json::object();
  for (const auto& [sig, e] : entries_) {
    json v;
    if (!e.ok()) {
      v["error"] = e.error;
    } else if (e.timed_alone()) {
      v = {
          {"median_us", e.median_us}, {"p10_us", e.p10_us}, {"p90_us", e.p90_us}, {"reps", e.reps}};
    }
    if (e.context_us > 0) {
      v["context_us"] = e.context_us;
      v["context_spread"] = e.context_spread;
      v["context_reps"] = e.context_reps;
    }
    v["timer"] = e.timer_version;
    v["kernel"] = e.kernel;
    entries[signature_hex(sig)] = std::move(v);
  }
  json j = {{"format", "orchid-profile-db"},
            {"version", kFormatVersion},
            {"device", device_},
            {"entries", std::move(entries)}};
  return j.dump(1) + "\n";
}

void ProfileDb::save() {
  const fs::path parent = fs::path(path_).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec)
      fail("profile database '{}': cannot create folder '{}': {}", path_, parent.string(),
           ec.message());
  }
  // Keep what other runs saved since we read the file; our entries win.
  for (auto& [sig, e] : read_entries(path_, max_spread_, device_))
    entries_.emplace(sig, std::move(e));
  write_file_atomically(path_, to_json());
  dirty_ = false;
}

std::string file_name_part(std::string text) {
  for (char& c : text) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_' || c == '.';
    if (!plain) c = '_';
  }
  return text;
}

std::string default_profile_db_path(const std::string& device) {
  const std::string file = "profile-" + file_name_part(device) + ".json";
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return (fs::path(xdg) / "orchid" / file).string();
  const char* home = std::getenv("HOME");
  if (home && *home) return (fs::path(home) / ".cache" / "orchid" / file).string();
  fail(
      "no place for the profile database: neither XDG_CACHE_HOME nor HOME is set; choose "
      "a database file explicitly");
}

}  // namespace orchid
