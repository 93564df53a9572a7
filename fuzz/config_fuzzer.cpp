// The TOML loaders: the first byte picks system (0), design library (1), device spec (2)
// or workload (3); the rest is the file's text. Systems are parsed as if they lived in
// configs/systems/, so the design library and device files they name resolve as shipped.
#include <string>

#include "cost/device_spec.hpp"
#include "fuzz_common.hpp"
#include "mapping/case_file.hpp"
#include "mapping/system.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  orchid::fuzz::limit_memory();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string root = ORCHID_SOURCE_DIR "/configs/";
  orchid::fuzz::expect_clean([&] {
    switch (data[0] % 4) {
      case 0:
        orchid::mapping::parse_system(text, root + "systems/fuzz.toml");
        break;
      case 1:
        orchid::mapping::parse_design_library(text, root + "designs/fuzz.toml");
        break;
      case 2:
        orchid::parse_device_spec(text, root + "devices/fuzz.toml");
        break;
      default:
        orchid::mapping::parse_case(text, root + "workloads/fuzz.toml", 1 + data[0] / 4);
        break;
    }
  });
  return 0;
}
