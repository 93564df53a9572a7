#include <filesystem>
#include <map>
#include <system_error>
#include <utility>

#include "cli/commands.hpp"
#include "ir/npy.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"

namespace orchid::cli {

// Output names may contain '/' or ':' (e.g. "logits/Add:0"); files may not. Control
// characters go too, and a name made only of dots would name a folder.
std::string file_name_for(const std::string& tensor_name) {
  std::string out = tensor_name;
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '/' || c == ':' || c == '\\' || u < 0x20 || u == 0x7f) c = '_';
  }
  if (out.find_first_not_of('.') == std::string::npos) out = "_" + out;
  return out;
}

void save_outputs(const std::string& dir, const std::vector<std::string>& names,
                  const TensorMap& outputs) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail("--save-outputs: cannot create '{}': {}", dir, ec.message());
  // Every output or none; two names that sanitise alike would overwrite each other.
  std::vector<std::pair<std::string, std::string>> files;
  std::map<std::string, std::string> saved_as;
  for (const auto& name : names) {
    const std::string file = file_name_for(name) + ".npy";
    auto [it, fresh] = saved_as.emplace(file, name);
    if (!fresh) {
      if (it->second == name) continue;  // listed twice as a graph output
      fail("--save-outputs: outputs '{}' and '{}' would both be saved as '{}'", it->second, name,
           file);
    }
    files.emplace_back((std::filesystem::path(dir) / file).string(), encode_npy(outputs.at(name)));
  }
  write_files_atomically(files);
}

}  // namespace orchid::cli
