// The CUDA target without a GPU: every zoo model's kernels (optimal plan, orchestrated
// for the a100 model) are generated for CUDA and compiled by NVRTC for sm_80 and sm_90;
// the build log must be free of errors. And, where nvcc is installed, the
// `orchid codegen --target cuda` output of one CNN and one transformer compiles with
// nvcc through its generated Makefile. Skipped when orchid is built without CUDA.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "codegen/cuda_backend.hpp"
#include "codegen/plan_codegen.hpp"
#include "codegen_test_util.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;

namespace orchid::codegen {
namespace {

DeviceProgram cuda_program(const std::string& name, const std::string& kind) {
  const Orchestration o = test::orchestrate_for_a100(test::load_zoo_model(name).graph);
  const Plan* plan = kind == "optimal" ? &o.optimal : &o.greedy;
  return generate_device_program(o.fission.graph, *plan, o.fission.alternatives, Target::Cuda);
}

TEST(NvrtcCache, ASecondCompileComesFromTheCache) {
  if (!cuda_built()) GTEST_SKIP() << "built without the CUDA toolkit";
  const orchid::test::TempDir temp("orchid_nvrtc_cache");
  const fs::path& dir = temp.path();
  const char* old = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old ? old : "";
  setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  const std::string source =
      prelude(Target::Cuda) +
      "KERNEL void k(GLOBAL float* x) { x[LOCAL_ID] = 2.0f * x[LOCAL_ID]; }\n";
  const NvrtcResult first = nvrtc_compile_cached(source, 80);
  ASSERT_TRUE(first.ok) << first.log;
  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir / "orchid" / "nvrtc"))
    entries += e.is_regular_file();
  EXPECT_EQ(entries, 1u);
  const NvrtcResult second = nvrtc_compile_cached(source, 80);
  EXPECT_TRUE(second.ok);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_TRUE(second.log.empty());                   // not compiled again
  EXPECT_TRUE(nvrtc_compile_cached(source, 90).ok);  // another architecture, another entry
  entries = 0;
  for (const auto& e : fs::directory_iterator(dir / "orchid" / "nvrtc"))
    entries += e.is_regular_file();
  EXPECT_EQ(entries, 2u);
  if (old) {
    setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  } else {
    unsetenv("XDG_CACHE_HOME");
  }
}

class NvrtcZoo : public ::testing::TestWithParam<std::string> {};
TEST_P(NvrtcZoo, CompilesForSm80AndSm90) {
  if (!cuda_built()) GTEST_SKIP() << "built without the CUDA toolkit";
  const DeviceProgram program = cuda_program(GetParam(), "optimal");
  for (int arch : {80, 90}) {
    const NvrtcResult r = nvrtc_compile(program.source, arch);
    EXPECT_TRUE(r.ok) << GetParam() << " sm_" << arch << ":\n" << r.log.substr(0, 4000);
    EXPECT_GT(r.cubin.size(), 0u);
  }
}
INSTANTIATE_TEST_SUITE_P(Zoo, NvrtcZoo,
                         ::testing::Values("tiny_mlp", "tiny_conv", "tiny_attention",
                                           "tiny_resize_pad", "tiny_shape_plumbing"));

class NvrtcZooLong : public ::testing::TestWithParam<std::string> {};
TEST_P(NvrtcZooLong, CompilesForSm80AndSm90) {
  if (!cuda_built()) GTEST_SKIP() << "built without the CUDA toolkit";
  for (const char* kind : {"optimal", "greedy-fusion"}) {
    const DeviceProgram program = cuda_program(GetParam(), kind);
    for (int arch : {80, 90}) {
      const NvrtcResult r = nvrtc_compile(program.source, arch);
      EXPECT_TRUE(r.ok) << GetParam() << " " << kind << " sm_" << arch << ":\n"
                        << r.log.substr(0, 4000);
    }
  }
}
INSTANTIATE_TEST_SUITE_P(Zoo, NvrtcZooLong,
                         ::testing::Values("mobilenet_v2", "mobilenet_v2_opset11", "resnet50",
                                           "candy", "yolox_nano", "segformer_b0", "bert_base",
                                           "vit_b_16"));

// `orchid codegen --target cuda` then `make` with nvcc: one CNN, one transformer.
TEST(NvccCodegen, CnnAndTransformerCompileWithNvcc) {
  const std::string nvcc = ORCHID_NVCC;
  if (nvcc.empty() || !fs::exists(nvcc)) GTEST_SKIP() << "nvcc is not installed";
  if (std::system("make --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "make is missing";
  const orchid::test::TempDir work("orchid_nvcc_codegen_test");
  for (const char* model : {"tiny_conv", "tiny_attention"}) {
    const fs::path out = work.path() / model;
    const std::string gen = std::string(ORCHID_BINARY) + " codegen " + ORCHID_MODELS_DIR + "/" +
                            model + ".onnx --target cuda --out " + out.string() + " > /dev/null";
    ASSERT_EQ(std::system(gen.c_str()), 0) << gen;
    const std::string build = "make -s -C " + out.string() + " NVCC=" + nvcc + " > " +
                              (out / "build.log").string() + " 2>&1";
    if (std::system(build.c_str()) != 0) {  // the folder goes with the test: show the log
      std::ifstream log(out / "build.log");
      ADD_FAILURE() << model << ": make failed:\n"
                    << std::string(std::istreambuf_iterator<char>(log), {});
    }
    EXPECT_TRUE(fs::exists(out / "plan_sm80.cubin")) << model;
    EXPECT_TRUE(fs::exists(out / "plan_sm90.cubin")) << model;
  }
}

}  // namespace
}  // namespace orchid::codegen
