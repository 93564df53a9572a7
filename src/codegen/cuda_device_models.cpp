// Which of orchid's device specs describes a GPU, by its marketing name.
#include <algorithm>
#include <cctype>

#include "codegen/cuda_backend.hpp"

namespace orchid::codegen {

std::optional<std::string> device_model_for_gpu(const std::string& gpu_name) {
  std::string upper = gpu_name;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  // Longest names first is not needed: the model numbers do not contain each other.
  for (const char* model : {"H200", "H100", "A100", "V100"}) {
    if (upper.find(model) != std::string::npos) {
      std::string spec = model;
      spec[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(spec[0])));
      return spec;
    }
  }
  return std::nullopt;
}

}  // namespace orchid::codegen
