// Shared by the fuzz targets: what counts as a finding. orchid::Error (bad input, one
// clear message) is the expected outcome for malformed data; any other exception, a
// crash, a sanitizer report, a hang or a huge allocation is a bug libFuzzer reports.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "util/error.hpp"
#include "util/memory_budget.hpp"

namespace orchid::fuzz {

// Far below libFuzzer's -rss_limit_mb: a model may declare more, never allocate it.
inline void limit_memory() {
  set_memory_budget(std::int64_t{256} << 20);
}

// A private folder per process for targets whose entry point reads a file.
inline std::string scratch_dir() {
  static const std::string dir = [] {
    const auto d =
        std::filesystem::temp_directory_path() / ("orchid_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir;
}

inline std::string write_scratch(const std::string& name, const std::uint8_t* data,
                                 std::size_t size) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

template <typename F>
void expect_clean(F&& f) {
  try {
    f();
  } catch (const orchid::Error&) {
    // the expected outcome for malformed input
  }
}

}  // namespace orchid::fuzz
