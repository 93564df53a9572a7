// A persistent database of measured kernel times, one JSON file per device, keyed by
// kernel_signature() (structure, shapes, dtypes and device). Measurements made for one
// model are reused by every later run and every other model with the same kernels.
//
// File format (version 1):
//   {"format": "orchid-profile-db", "version": 1, "device": "cpu",
//    "entries": {"<16 hex digits>": {"median_us": 12.5, "p10_us": 12.1, "p90_us": 13.9,
//                                    "reps": 50, "timer": 1, "kernel": "MatMul+Add -> ..."},
//                "<16 hex digits>": {"error": "why it could not be timed", "timer": 1,
//                                    "kernel": "..."}}}
// The in-context database (profile/in_context_costs.hpp) is a file of the same format
// whose entries hold a kernel's median time inside whole-plan runs of a model instead:
//                "<16 hex digits>": {"context_us": 9.8, "context_spread": 1.3,
//                                    "context_reps": 12, "timer": 1, "kernel": "..."}
// Writes are atomic (temporary file + rename) and merge entries that another process
// saved in the meantime, so concurrent runs lose nothing but each other's duplicates.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>

namespace orchid {

struct ProfileEntry {
  double median_us = 0;
  double p10_us = 0;
  double p90_us = 0;
  int reps = 0;
  int timer_version = 0;  // the kernel timer's methodology version it was measured with
  std::string kernel;     // human description (kernel_summary), informational
  std::string error;      // non-empty: the kernel could not be timed (why)
  // Median time inside whole-plan runs (0: not timed so), over context_reps runs whose
  // p90/p10 was context_spread (may exceed kMaxSpread: kept after re-timing, so marked).
  double context_us = 0;
  double context_spread = 0;
  int context_reps = 0;
  bool ok() const { return error.empty(); }
  // Timed alone (kernel_timer.hpp): median/p10/p90 hold; an in-context entry has none.
  bool timed_alone() const { return ok() && reps > 0; }
  // A timing whose runs spread too wide to be reused (p90/p10 above kMaxSpread): taken
  // while something else loaded the machine. Never stored.
  static constexpr double kMaxSpread = 2.0;
  bool too_noisy(double max_spread = kMaxSpread) const {
    return timed_alone() && max_spread < std::numeric_limits<double>::infinity() &&
           !(p90_us <= max_spread * p10_us);
  }
};

class ProfileDb {
 public:
  static constexpr int kFormatVersion = 1;

  // An empty database that will be saved to `path`. `max_spread`: entries noisier than
  // this (p90/p10) are neither stored nor read.
  ProfileDb(std::string path, std::string device, double max_spread = ProfileEntry::kMaxSpread);
  // Reads `path` if it exists (else empty). A corrupt or foreign file, another device or
  // another format version is an orchid::Error naming the file (and key).
  static ProfileDb open(const std::string& path, const std::string& device,
                        double max_spread = ProfileEntry::kMaxSpread);

  const ProfileEntry* find(std::uint64_t signature) const;
  // Stores the entry unless it is too noisy (then false, and nothing changes). Entries of
  // a file that are too noisy are dropped when it is read.
  bool put(std::uint64_t signature, ProfileEntry entry);
  std::size_t size() const { return entries_.size(); }
  const std::map<std::uint64_t, ProfileEntry>& entries() const { return entries_; }
  const std::string& path() const { return path_; }
  const std::string& device() const { return device_; }
  bool dirty() const { return dirty_; }
  double max_spread() const { return max_spread_; }

  // Creates the folder if needed, merges entries saved by others since open (ours win),
  // writes atomically.
  void save();

  // The JSON text of the database.
  std::string to_json() const;

 private:
  std::string path_;
  std::string device_;
  std::map<std::uint64_t, ProfileEntry> entries_;
  bool dirty_ = false;
  double max_spread_ = ProfileEntry::kMaxSpread;
};

// `text` with every character but letters, digits, '-', '_' and '.' replaced by '_': a
// part of a file name (a device name, an ISA).
std::string file_name_part(std::string text);

// $XDG_CACHE_HOME/orchid/profile-<device>.json, else $HOME/.cache/orchid/...; an
// orchid::Error when neither variable is set.
std::string default_profile_db_path(const std::string& device);

}  // namespace orchid
