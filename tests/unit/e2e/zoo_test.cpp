// End-to-end checks on the model zoo: every model imports to a valid static graph and
// runs through the reference interpreter with finite outputs; models with committed
// reference data (ONNX Runtime outputs, tests/data/reference/<model>/) must match it
// within |orchid - ort| <= 1e-4 + 1e-3 * |ort|.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "eval/random_inputs.hpp"
#include "eval/reference_interpreter.hpp"
#include "ir/npy.hpp"
#include "op_test_util.hpp"
#include "passes/load_model.hpp"

namespace fs = std::filesystem;

namespace orchid {
namespace {

std::vector<std::string> zoo_models() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(ORCHID_MODELS_DIR)) {
    if (entry.path().extension() == ".onnx") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string model_path(const std::string& name) {
  return (fs::path(ORCHID_MODELS_DIR) / (name + ".onnx")).string();
}

class ZooModel : public ::testing::TestWithParam<std::string> {};

// Models whose post-processing makes output sizes depend on the data (NMS).
bool has_data_dependent_shapes(const std::string& name) {
  return name == "ssdlite320";
}

TEST_P(ZooModel, ImportsRunsAndGivesFiniteOutputs) {
  const LoadedModel model = load_model(model_path(GetParam()));
  const Graph& g = model.graph;
  EXPECT_NO_THROW(g.validate());
  EXPECT_EQ(g.first_dynamic_node() != nullptr, has_data_dependent_shapes(GetParam()));
  for (const Node& node : g.nodes) {
    for (const auto& out : node.outputs) {
      // Typed, or (only downstream of a data-dependent op) sized at run time.
      if (!out.empty()) {
        EXPECT_TRUE(g.tensor(out).has_type || g.tensor(out).dynamic) << out;
      }
    }
  }
  // Exporters' shape plumbing must fold away: no Shape node of a static tensor survives.
  for (const Node& node : g.nodes) {
    if (node.op_type == "Shape") {
      EXPECT_TRUE(g.is_dynamic(node.inputs[0])) << node.name;
    }
  }

  ReferenceInterpreter interpreter(model.graph);
  const TensorMap outputs = interpreter.run(make_random_inputs(model.graph, 0));
  ASSERT_EQ(outputs.size(), model.graph.outputs.size());
  for (const auto& [name, value] : outputs) {
    double abs_sum = 0;
    for (std::int64_t i = 0; i < value.numel(); ++i) {
      const double v = value.get_as_double(i);
      ASSERT_TRUE(std::isfinite(v)) << name << "[" << i << "]";
      abs_sum += std::fabs(v);
    }
    EXPECT_GT(abs_sum, 0.0) << name << " is all zeros";
  }
}

TEST_P(ZooModel, SameSeedGivesSameOutputs) {
  const LoadedModel a = load_model(model_path(GetParam()));
  const LoadedModel b = load_model(model_path(GetParam()));
  const TensorMap out_a = ReferenceInterpreter(a.graph).run(make_random_inputs(a.graph, 7));
  const TensorMap out_b = ReferenceInterpreter(b.graph).run(make_random_inputs(b.graph, 7));
  EXPECT_EQ(out_a, out_b);
}

INSTANTIATE_TEST_SUITE_P(Models, ZooModel, ::testing::ValuesIn(zoo_models()),
                         [](const auto& info) { return info.param; });

TEST(ZooReference, OutputsMatchOnnxRuntime) {
  const fs::path root = fs::path(ORCHID_TEST_DATA_DIR) / "reference";
  ASSERT_TRUE(fs::exists(root)) << "tests/data/reference is missing";
  std::size_t checked = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    const LoadedModel model = load_model(model_path(name));
    TensorMap feed;
    for (const auto& in : model.graph.inputs) {
      feed.emplace(in, read_npy((entry.path() / "inputs" / (in + ".npy")).string()));
    }
    const TensorMap outputs = ReferenceInterpreter(model.graph).run(feed);
    for (const auto& out : model.graph.outputs) {
      std::string file = out;
      for (char& c : file) {
        if (c == '/' || c == ':') c = '_';
      }
      const Tensor expected = read_npy((entry.path() / "outputs" / (file + ".npy")).string());
      EXPECT_TRUE(testing::tensors_close(outputs.at(out), expected, 1e-3, 1e-4)) << out;
    }
    ++checked;
  }
  EXPECT_GE(checked, 5u) << "expected reference data for at least the tiny models";
}

}  // namespace
}  // namespace orchid
