// Models as current tools write them (tests/data/models, made by tools/make_test_models.py):
// symbolic dims, fp16 inside with fp32 I/O, bf16 throughout, Dropout masks and BatchNorm
// training outputs left in inference graphs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "error_message.hpp"
#include "eval/random_inputs.hpp"
#include "eval/reference_interpreter.hpp"
#include "onnx/onnx_reader.hpp"
#include "passes/load_model.hpp"
#include "util/memory_budget.hpp"

namespace orchid {
namespace {

using testing::error_of;

std::string model(const char* name) {
  return std::string(ORCHID_TEST_DATA_DIR) + "/models/" + name + ".onnx";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(NewerModels, DefaultedDimsAreWarnedByName) {
  std::vector<std::string> warnings;
  ImportOptions options;
  options.warn = [&](const std::string& w) { warnings.push_back(w); };
  options.dim_params["batch"] = 2;
  const Graph g = read_onnx(model("attention_dynamic"), options);
  EXPECT_EQ(g.tensor("x").shape, (Shape{2, 1, 32}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(contains(warnings[0], "'seq'")) << warnings[0];
  EXPECT_TRUE(contains(warnings[0], "set to 1")) << warnings[0];
  EXPECT_TRUE(contains(warnings[0], "--dim seq=N")) << warnings[0];
  EXPECT_EQ(g.metadata.at(declared_shape_key("x")), "batch x seq x 32");
}

TEST(NewerModels, UnknownDimNameListsTheDeclaredOnes) {
  ImportOptions options;
  options.dim_params["seqq"] = 128;
  const auto msg = error_of([&] { read_onnx(model("attention_dynamic"), options); });
  EXPECT_TRUE(contains(msg, "'seqq'")) << msg;
  EXPECT_TRUE(contains(msg, "batch, seq")) << msg;
}

TEST(NewerModels, ShapeOverrideMustKeepTheRank) {
  ImportOptions options;
  options.input_shapes["x"] = {2, 16};
  auto msg = error_of([&] { read_onnx(model("attention_dynamic"), options); });
  EXPECT_TRUE(contains(msg, "rank 2")) << msg;
  EXPECT_TRUE(contains(msg, "batch x seq x 32")) << msg;
  options.input_shapes["x"] = {2, 16, 32};
  EXPECT_EQ(read_onnx(model("attention_dynamic"), options).tensor("x").shape, (Shape{2, 16, 32}));
}

TEST(NewerModels, Opset18AttentionRunsAtTheChosenLength) {
  ImportOptions options;
  options.dim_params = {{"batch", 2}, {"seq", 5}};
  const LoadedModel loaded = load_model(model("attention_dynamic"), options);
  EXPECT_EQ(loaded.graph.tensor("y").shape, (Shape{2, 5, 32}));
  const TensorMap out = ReferenceInterpreter(loaded.graph).run(make_random_inputs(loaded.graph, 3));
  for (float v : out.at("y").values<float>()) ASSERT_TRUE(std::isfinite(v));
}

TEST(NewerModels, TooLongSequenceIsRefusedWithItsSize) {
  set_memory_budget(std::int64_t{1} << 30);
  ImportOptions options;
  options.dim_params["seq"] = 100000;
  const auto msg = error_of([&] { load_model(model("attention_dynamic"), options); });
  set_memory_budget(0);
  EXPECT_TRUE(contains(msg, "40000000000 bytes")) << msg;
  EXPECT_TRUE(contains(msg, "scores")) << msg;
}

// y = softmax(relu(x W1 + b1) W2 + b2) computed in f32 from the f16 weights: the fp16
// model may differ only by f16 rounding of its intermediate tensors.
TEST(NewerModels, Fp16InsideFp32OutsideMatchesF32Math) {
  const LoadedModel loaded = load_model(model("mlp_fp16"));
  const Graph& g = loaded.graph;
  EXPECT_EQ(g.tensor("x").dtype, DType::F32);
  EXPECT_EQ(g.tensor("y").dtype, DType::F32);
  EXPECT_EQ(g.tensor("w1").dtype, DType::F16);
  EXPECT_EQ(g.tensor("hb").dtype, DType::F16);
  const TensorMap feed = make_random_inputs(g, 5);
  const TensorMap out = ReferenceInterpreter(g).run(feed);

  auto weights = [&](const char* name) { return g.tensor(name).data->to_floats(); };
  const auto w1 = weights("w1"), b1 = weights("b1"), w2 = weights("w2"), b2 = weights("b2");
  const auto x = feed.at("x").to_floats();
  const auto y = out.at("y").values<float>();
  for (int r = 0; r < 4; ++r) {
    std::vector<float> a(32), z(8);
    for (int j = 0; j < 32; ++j) {
      float s = b1[j];
      for (int k = 0; k < 16; ++k) s += x[r * 16 + k] * w1[k * 32 + j];
      a[j] = std::max(s, 0.0f);
    }
    for (int j = 0; j < 8; ++j) {
      z[j] = b2[j];
      for (int k = 0; k < 32; ++k) z[j] += a[k] * w2[k * 8 + j];
    }
    const float m = *std::max_element(z.begin(), z.end());
    float sum = 0;
    for (float& v : z) sum += (v = std::exp(v - m));
    for (int j = 0; j < 8; ++j) EXPECT_NEAR(y[r * 8 + j], z[j] / sum, 5e-3) << r << "," << j;
  }
}

TEST(NewerModels, Bf16ConvMatchesF32MathWithinBf16Rounding) {
  const LoadedModel loaded = load_model(model("conv_bf16"));
  const Graph& g = loaded.graph;
  ASSERT_EQ(g.tensor("x").dtype, DType::BF16);
  ASSERT_EQ(g.tensor("y").dtype, DType::BF16);
  const TensorMap feed = make_random_inputs(g, 9);
  const Tensor y = ReferenceInterpreter(g).run(feed).at("y");
  ASSERT_EQ(y.dtype(), DType::BF16);
  const auto x = feed.at("x").to_floats();
  const auto w = g.tensor("w").data->to_floats();
  const auto got = y.to_floats();
  for (int o = 0; o < 8; ++o) {
    double total = 0;
    for (int i = 0; i < 8; ++i) {
      for (int j = 0; j < 8; ++j) {
        double s = 0;
        for (int c = 0; c < 3; ++c) {
          for (int di = 0; di < 3; ++di) {
            for (int dj = 0; dj < 3; ++dj) {
              const int ii = i + di - 1, jj = j + dj - 1;
              if (ii < 0 || ii >= 8 || jj < 0 || jj >= 8) continue;
              s += x[(c * 8 + ii) * 8 + jj] * w[((o * 3 + c) * 3 + di) * 3 + dj];
            }
          }
        }
        // The conv output is a bf16 tensor: rounded before Relu and the pool.
        total += std::max(
            0.0, static_cast<double>(bfloat16_to_float(float_to_bfloat16(static_cast<float>(s)))));
      }
    }
    const double expected = total / 64;
    EXPECT_NEAR(got[o], expected, 1e-2 * std::abs(expected) + 1e-3) << o;
  }
}

TEST(NewerModels, DropoutMaskAndBatchNormTrainingOutputs) {
  const LoadedModel loaded = load_model(model("dropout_mask"));
  const Graph& g = loaded.graph;
  EXPECT_EQ(g.tensor("mask").dtype, DType::Bool);
  const TensorMap feed = make_random_inputs(g, 1);
  const TensorMap out = ReferenceInterpreter(g).run(feed);
  const auto mask = out.at("mask").values<bool>();
  EXPECT_EQ(mask.size(), 24u);
  EXPECT_TRUE(std::all_of(mask.begin(), mask.end(), [](bool b) { return b; }));
  // y is BatchNormalization's Y, untouched by the inference-mode Dropout.
  const auto x = feed.at("x").to_floats();
  const auto y = out.at("y").to_floats();
  const auto scale = g.tensor("scale").data->to_floats(), bias = g.tensor("bias").data->to_floats();
  const auto mean = g.tensor("mean").data->to_floats(), var = g.tensor("var").data->to_floats();
  for (int i = 0; i < 24; ++i) {
    const int c = (i / 3) % 4;
    const float want = (x[i] - mean[c]) / std::sqrt(var[c] + 1e-5f) * scale[c] + bias[c];
    EXPECT_NEAR(y[i], want, 1e-5) << i;
  }
}

}  // namespace
}  // namespace orchid
