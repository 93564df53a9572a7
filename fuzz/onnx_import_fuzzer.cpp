// The ONNX importer end to end: protobuf parsing, opset upgrades, stripped-weight
// regeneration, external data (a side file next to the model), shape inference and
// constant folding (load_model). Seeds: the zoo's small models (fuzz/corpus/onnx_import).
#include "fuzz_common.hpp"
#include "passes/load_model.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  orchid::fuzz::limit_memory();
  // A side file the mutated models may name as external data ("weights.bin").
  const std::string blob(4096, '\x01');
  orchid::fuzz::write_scratch("weights.bin", reinterpret_cast<const std::uint8_t*>(blob.data()),
                              blob.size());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = orchid::fuzz::write_scratch("model.onnx", data, size);
  orchid::fuzz::expect_clean([&] { orchid::load_model(path); });
  return 0;
}
