#include "util/atomic_file.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "util/error.hpp"

namespace orchid {

void write_file_atomically(const std::string& path, std::string_view content) {
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
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
