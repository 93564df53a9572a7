// The .npy reader (header dict parser, dtype, shape, data length).
#include <string_view>

#include "fuzz_common.hpp"
#include "ir/npy.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  orchid::fuzz::limit_memory();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  orchid::fuzz::expect_clean([&] { orchid::parse_npy(bytes, "fuzz.npy"); });
  return 0;
}
