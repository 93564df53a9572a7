// Quantized and recurrent ops against ONNX Runtime: every case under
// tests/data/quant_recurrent/ (written by tools/make_quant_recurrent_cases.py) runs on the
// reference interpreter and must match ORT's outputs within the case's stated tolerance
// (its `tolerance` file: atol rtol; quantized cases allow a stated number of steps).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "error_message.hpp"
#include "eval/reference_interpreter.hpp"
#include "fission/fission.hpp"
#include "ir/npy.hpp"
#include "ir/op_registry.hpp"
#include "op_test_util.hpp"
#include "passes/load_model.hpp"

namespace fs = std::filesystem;

namespace orchid {
namespace {

TEST(QuantRecurrentCases, MatchOnnxRuntime) {
  const fs::path root = fs::path(ORCHID_TEST_DATA_DIR) / "quant_recurrent";
  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(root)) cases.push_back(entry.path());
  std::sort(cases.begin(), cases.end());
  std::size_t checked = 0;
  for (const auto& dir : cases) {
    SCOPED_TRACE(dir.filename().string());
    const LoadedModel model = load_model((dir / "model.onnx").string());
    TensorMap feed;
    for (const auto& in : model.graph.inputs) {
      feed.emplace(in, read_npy((dir / "inputs" / (in + ".npy")).string()));
    }
    double atol = 0, rtol = 0;
    std::ifstream(dir / "tolerance") >> atol >> rtol;
    const TensorMap outputs = ReferenceInterpreter(model.graph).run(feed);
    for (const auto& out : model.graph.outputs) {
      const Tensor expected = read_npy((dir / "outputs" / (out + ".npy")).string());
      EXPECT_TRUE(testing::tensors_close(outputs.at(out), expected, rtol, atol)) << out;
    }
    ++checked;
  }
  EXPECT_GE(checked, 12u);
}

// Fission (Q/DQ and the integer ops as float primitives, recurrent layers unrolled per
// step) computes what the model computes: the primitive graph, run on the reference
// interpreter, matches ONNX Runtime within the case's tolerance. Cases fission refuses
// by name (sequence_lens shorter than the sequence, activations that are not
// primitives) are counted and must be few.
TEST(QuantRecurrentCases, FissionMatchesOnnxRuntime) {
  const fs::path root = fs::path(ORCHID_TEST_DATA_DIR) / "quant_recurrent";
  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(root)) cases.push_back(entry.path());
  std::sort(cases.begin(), cases.end());
  std::size_t fissioned = 0, refused = 0;
  for (const auto& dir : cases) {
    SCOPED_TRACE(dir.filename().string());
    const LoadedModel model = load_model((dir / "model.onnx").string());
    FissionResult primitives;
    try {
      primitives = fission(model.graph);
    } catch (const UnsupportedError& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.find("sequence_lens") != std::string::npos ||
                  what.find("activation") != std::string::npos)
          << what;
      ++refused;
      continue;
    }
    TensorMap feed;
    for (const auto& in : model.graph.inputs) {
      feed.emplace(in, read_npy((dir / "inputs" / (in + ".npy")).string()));
    }
    double atol = 0, rtol = 0;
    std::ifstream(dir / "tolerance") >> atol >> rtol;
    // One quantization step more for requantized integer outputs: fission rounds the
    // float product once where the integer reference rounds acc * multiplier.
    if (dir.filename() == "integer_linear") atol += 1.0;
    const TensorMap outputs = ReferenceInterpreter(primitives.graph).run(feed);
    for (const auto& out : model.graph.outputs) {
      const Tensor expected = read_npy((dir / "outputs" / (out + ".npy")).string());
      EXPECT_TRUE(testing::tensors_close(outputs.at(out), expected, std::max(rtol, 1e-4),
                                         std::max(atol, 1e-5)))
          << out;
    }
    ++fissioned;
  }
  // Refused today: the four cases with sequence_lens shorter than the sequence and the
  // one with HardSigmoid/LeakyRelu/Softsign activations.
  EXPECT_GE(fissioned, 7u);
  EXPECT_LE(refused, 5u);
}

// layout = 1 (batch first) is the same computation on transposed tensors; ORT has no
// batch-first recurrent kernels, so it is checked against orchid's own layout-0 result.
TEST(RecurrentOps, BatchFirstLayoutIsTheTransposedComputation) {
  for (const char* op : {"LSTM", "GRU", "RNN"}) {
    SCOPED_TRACE(op);
    const std::int64_t T = 4, B = 2, I = 3, H = 5;
    const std::int64_t gates = std::string(op) == "LSTM" ? 4 : std::string(op) == "GRU" ? 3 : 1;
    auto random = [](Shape s, float seed) {
      Tensor t(DType::F32, s);
      auto v = t.values<float>();
      for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = std::sin(seed + 0.7f * static_cast<float>(i));
      return t;
    };
    auto build = [&](bool batch_first) {
      Graph g;
      g.inputs = {"X", "h0"};
      g.set_type("X", DType::F32, batch_first ? Shape{B, T, I} : Shape{T, B, I});
      g.set_type("h0", DType::F32, batch_first ? Shape{B, 2, H} : Shape{2, B, H});
      g.set_constant("W", random({2, gates * H, I}, 1));
      g.set_constant("R", random({2, gates * H, H}, 2));
      g.set_constant("Bias", random({2, 2 * gates * H}, 3));
      Node n{"rec", op, "", {}, {"X", "W", "R", "Bias", "", "h0"}, {"Y", "Y_h"}};
      n.attributes["hidden_size"] = H;
      n.attributes["direction"] = std::string("bidirectional");
      n.attributes["layout"] = std::int64_t{batch_first ? 1 : 0};
      g.nodes.push_back(n);
      g.outputs = {"Y", "Y_h"};
      infer_shapes(g);
      return g;
    };
    const Graph seq_first = build(false);
    const Graph batch_first = build(true);
    const Tensor x = random({T, B, I}, 4);
    const Tensor h0 = random({2, B, H}, 5);
    Tensor xb(DType::F32, {B, T, I}), hb(DType::F32, {B, 2, H});
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t i = 0; i < I; ++i)
          xb.data<float>()[(b * T + t) * I + i] = x.data<float>()[(t * B + b) * I + i];
    for (std::int64_t d = 0; d < 2; ++d)
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t j = 0; j < H; ++j)
          hb.data<float>()[(b * 2 + d) * H + j] = h0.data<float>()[(d * B + b) * H + j];
    const TensorMap a = ReferenceInterpreter(seq_first).run({{"X", x}, {"h0", h0}});
    const TensorMap c = ReferenceInterpreter(batch_first).run({{"X", xb}, {"h0", hb}});
    ASSERT_EQ(c.at("Y").shape(), (Shape{B, T, 2, H}));
    // The unrolled primitives of the batch-first node compute the same.
    const FissionResult unrolled = fission(batch_first);
    const TensorMap f = ReferenceInterpreter(unrolled.graph).run({{"X", xb}, {"h0", hb}});
    EXPECT_TRUE(testing::tensors_close(f.at("Y"), c.at("Y"), 1e-4, 1e-5));
    EXPECT_TRUE(testing::tensors_close(f.at("Y_h"), c.at("Y_h"), 1e-4, 1e-5));
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t d = 0; d < 2; ++d)
        for (std::int64_t b = 0; b < B; ++b)
          for (std::int64_t j = 0; j < H; ++j) {
            EXPECT_EQ(a.at("Y").data<float>()[((t * 2 + d) * B + b) * H + j],
                      c.at("Y").data<float>()[((b * T + t) * 2 + d) * H + j]);
          }
    for (std::int64_t d = 0; d < 2; ++d)
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t j = 0; j < H; ++j) {
          EXPECT_EQ(a.at("Y_h").data<float>()[(d * B + b) * H + j],
                    c.at("Y_h").data<float>()[(b * 2 + d) * H + j]);
        }
  }
}

Graph one_node(Node n, std::vector<std::pair<std::string, TensorType>> inputs,
               std::vector<std::pair<std::string, Tensor>> constants) {
  Graph g;
  for (auto& [name, type] : inputs) {
    g.inputs.push_back(name);
    g.set_type(name, type.dtype, type.shape);
  }
  for (auto& [name, value] : constants) g.set_constant(name, value);
  g.outputs = n.outputs;
  g.nodes.push_back(std::move(n));
  return g;
}

TEST(RecurrentOps, BadAttributesAreNamedErrors) {
  Node n{"lstm", "LSTM", "", {}, {"X", "W", "R"}, {"Y"}};
  n.attributes["direction"] = std::string("sideways");
  Graph g = one_node(n, {{"X", {DType::F32, {2, 1, 3}}}},
                     {{"W", Tensor(DType::F32, {1, 8, 3})}, {"R", Tensor(DType::F32, {1, 8, 2})}});
  EXPECT_NE(testing::error_of([&] { infer_shapes(g); }).find("sideways"), std::string::npos);
  g.nodes[0].attributes["direction"] = std::string("forward");
  g.nodes[0].attributes["activations"] = std::vector<std::string>{"Sigmoid", "Gelu", "Tanh"};
  EXPECT_NE(testing::error_of([&] { infer_shapes(g); }).find("recurrent activation 'Gelu'"),
            std::string::npos);
  g.nodes[0].attributes.erase("activations");
  g.nodes[0].attributes["hidden_size"] = std::int64_t{3};
  EXPECT_NE(testing::error_of([&] { infer_shapes(g); }).find("hidden_size 3"), std::string::npos);
}

TEST(QuantizationOps, ScaleThatFitsNoAxisIsANamedError) {
  Node n{"q", "QuantizeLinear", "", {}, {"x", "s"}, {"y"}};
  n.attributes["axis"] = std::int64_t{1};
  Graph g = one_node(n, {{"x", {DType::F32, {2, 3}}}},
                     {{"s", Tensor::from_vector<float>({2}, {0.1f, 0.2f})}});
  EXPECT_NE(testing::error_of([&] { infer_shapes(g); }).find("one value per index of axis 1"),
            std::string::npos);
  g.nodes[0].attributes["output_dtype"] = std::int64_t{22};  // int4
  g.set_constant("s", Tensor::from_vector<float>({3}, {0.1f, 0.2f, 0.3f}));
  EXPECT_NE(testing::error_of([&] { infer_shapes(g); }).find("output_dtype 22"), std::string::npos);
}

}  // namespace
}  // namespace orchid
