// QDQ models on the CPU plan executor with int8 kernels: quantize_static's QDQ Conv/MatMul
// become QLinearConv/QLinearMatMul primitives (fission/qdq_linear.hpp) that run on
// oneDNN's int8 kernels (runtime/int8_linear.hpp). Each case (tests/data/quant_int8/,
// written by tools/make_int8_cases.py, and quant_recurrent/qdq_tiny_conv) must match ONNX
// Runtime within its stated tolerance (3 output quantization steps) with the same argmax
// per row, with the int8 kernels and with the fp32-after-dequantization path. ctest runs
// these again with ONEDNN_MAX_CPU_ISA=AVX2 (Int8LinearAvx2.*), oneDNN's other int8 kernels.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cost/cost_model.hpp"
#include "ir/npy.hpp"
#include "op_test_util.hpp"
#include "orchestrate/orchestrator.hpp"
#include "passes/load_model.hpp"
#include "runtime/int8_linear.hpp"
#include "runtime/plan_executor.hpp"
#include "test_config_roots.hpp"

namespace fs = std::filesystem;

namespace orchid {
namespace {

std::int64_t argmax_row(const Tensor& t, std::int64_t row, std::int64_t cols) {
  std::int64_t best = 0;
  for (std::int64_t c = 1; c < cols; ++c) {
    if (t.get_as_double(row * cols + c) > t.get_as_double(row * cols + best)) best = c;
  }
  return best;
}

// Runs the case's optimal CPU plan and checks it against ORT; returns the executor stats.
PlanExecutorStats check_case(const fs::path& dir, bool int8, std::vector<std::string>* notes) {
  const LoadedModel model = load_model((dir / "model.onnx").string());
  TensorMap feed;
  for (const auto& in : model.graph.inputs) {
    feed.emplace(in, read_npy((dir / "inputs" / (in + ".npy")).string()));
  }
  double atol = 0, rtol = 0;
  std::ifstream(dir / "tolerance") >> atol >> rtol;
  const auto cost_model = make_analytic_cost_model(load_device_spec("cpu", test::source_configs()));
  OrchestrateOptions options;
  options.int8_linear = int8;
  const Orchestration o = orchestrate(model.graph, *cost_model, options);
  if (notes) *notes = o.fission.notes;
  PlanExecutor executor(o.fission.graph, o.optimal, o.fission.alternatives);
  for (int round = 0; round < 2; ++round) {  // the second run reuses every buffer
    const TensorMap got = executor.run(feed);
    for (const auto& out : model.graph.outputs) {
      const Tensor want = read_npy((dir / "outputs" / (out + ".npy")).string());
      const Tensor& have = got.at(out);
      EXPECT_TRUE(testing::tensors_close(have, want, rtol, atol)) << out;
      if (want.shape().size() == 2) {
        for (std::int64_t r = 0; r < want.shape()[0]; ++r) {
          EXPECT_EQ(argmax_row(have, r, want.shape()[1]), argmax_row(want, r, want.shape()[1]))
              << out << " row " << r;
        }
      }
    }
  }
  return executor.stats();
}

std::vector<fs::path> cases() {
  const fs::path data(ORCHID_TEST_DATA_DIR);
  std::vector<fs::path> out = {data / "quant_recurrent" / "qdq_tiny_conv"};
  for (const auto& e : fs::directory_iterator(data / "quant_int8")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Int8Linear, QdqModelsMatchOnnxRuntimeOnInt8Kernels) {
  std::size_t checked = 0;
  for (const auto& dir : cases()) {
    SCOPED_TRACE(dir.filename().string());
    std::vector<std::string> notes;
    const PlanExecutorStats stats = check_case(dir, true, &notes);
    // Every QDQ Conv/MatMul of these models runs on an int8 kernel; only their Gemm
    // (the classifier) stays in fp32, and the run says so.
    // Without VNNI (ONEDNN_MAX_CPU_ISA=AVX2) weights whose int16 pair sums could saturate
    // run on the reference kernel instead, and say why.
    EXPECT_GE(stats.int8_primitives + stats.int8_fallbacks.size(), 2u);
    for (const auto& why : stats.int8_fallbacks) {
      EXPECT_NE(why.find("no VNNI"), std::string::npos) << why;
    }
    if (int8_kernels_without_saturation()) {
      EXPECT_GE(stats.int8_primitives, 2u);
    }
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("QDQ Gemm runs in fp32 after dequantization"), std::string::npos);
    ++checked;
  }
  EXPECT_GE(checked, 3u);
}

TEST(Int8Linear, QdqModelsMatchOnnxRuntimeInFp32AfterDequantization) {
  for (const auto& dir : cases()) {
    SCOPED_TRACE(dir.filename().string());
    const PlanExecutorStats stats = check_case(dir, false, nullptr);
    EXPECT_EQ(stats.int8_primitives, 0u);
  }
}

// The fused primitive is the integer op ONNX defines: on the reference interpreter the
// fissioned graph (QLinearConv/QLinearMatMul kept) matches ORT too.
TEST(Int8Linear, FissionKeepsIntegerPrimitivesOnlyWithTheOption) {
  const LoadedModel model = load_model(
      (fs::path(ORCHID_TEST_DATA_DIR) / "quant_int8" / "small_cnn_u8_per_channel" / "model.onnx")
          .string());
  auto count = [](const Graph& g) {
    std::size_t n = 0;
    for (const Node& node : g.nodes) n += node.op_type.rfind("QLinear", 0) == 0;
    return n;
  };
  FissionOptions on, off;
  off.int8_linear = false;
  EXPECT_EQ(count(fission(model.graph, on).graph), 5u);  // 4 Conv + 1 MatMul
  EXPECT_EQ(count(fission(model.graph, off).graph), 0u);
}

}  // namespace
}  // namespace orchid
