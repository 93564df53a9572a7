#include "util/atomic_file.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "util/error.hpp"

namespace orchid {

namespace {

std::string temp_name(const std::string& path) {
  return path + ".tmp." + std::to_string(::getpid());
}

void remove_quietly(const std::string& path) {
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
}

// Writes `content` to the temporary file of `path`; on failure removes it and fails.
std::string write_temp(const std::string& path, std::string_view content) {
  const std::string temp = temp_name(path);
  std::ofstream out(temp, std::ios::binary | std::ios::trunc);
  if (!out) fail("cannot write '{}': cannot create temporary file '{}'", path, temp);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.flush();
  if (!out) {
    out.close();
    remove_quietly(temp);
    fail("cannot write '{}': write failed (disk full?)", path);
  }
  return temp;
}

}  // namespace

void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files) {
  for (std::size_t i = 0; i < files.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      std::error_code ec;
      if (files[i].first == files[j].first ||
          std::filesystem::equivalent(files[i].first, files[j].first, ec)) {
        fail("'{}' is named as two outputs", files[i].first);
      }
    }
  }
  std::vector<std::string> temps;
  try {
    for (const auto& [path, content] : files) temps.push_back(write_temp(path, content));
  } catch (const Error&) {
    for (const auto& t : temps) remove_quietly(t);
    throw;
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    std::filesystem::rename(temps[i], files[i].first, ec);
    if (ec) {
      for (std::size_t j = i; j < temps.size(); ++j) remove_quietly(temps[j]);
      fail("cannot write '{}': {}", files[i].first, ec.message());
    }
  }
}

void write_file_atomically(const std::string& path, std::string_view content) {
  const std::string temp = temp_name(path);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) fail("cannot write '{}': cannot create temporary file '{}'", path, temp);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temp, ignored);
      fail("cannot write '{}': write failed (disk full?)", path);
    }
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    fail("cannot write '{}': {}", path, ec.message());
  }
}

}  // namespace orchid
