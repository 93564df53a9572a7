// The plan loader and validator (`orchid run --plan`) against a fixed model: fission of
// models/tiny_mlp.onnx, whose plans (fuzz/corpus/plan) are the seeds. A plan that passes
// validation must only reference what exists; its arena slots are also checked here
// against the sizes the executor would use.
#include <string>

#include "fission/fission.hpp"
#include "fission/kernel_view.hpp"
#include "fuzz_common.hpp"
#include "orchestrate/plan_import.hpp"
#include "passes/load_model.hpp"

namespace {
orchid::FissionResult* primitives = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  orchid::fuzz::limit_memory();
  const auto model = orchid::load_model(ORCHID_SOURCE_DIR "/models/tiny_mlp.onnx");
  primitives = new orchid::FissionResult(orchid::fission(model.graph, orchid::FissionOptions{}));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  orchid::fuzz::expect_clean([&] {
    const orchid::Plan plan =
        orchid::plan_from_json(text, primitives->graph, primitives->alternatives, "fuzz plan");
    // What validation promises the executor: every slot fits its tensor and the arena.
    for (const auto& s : plan.arena) {
      if (s.offset + s.bytes > plan.arena_bytes ||
          s.bytes < orchid::tensor_bytes(primitives->graph, s.tensor)) {
        std::abort();
      }
    }
  });
  return 0;
}
