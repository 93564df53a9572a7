// Operator fission: Every zoo model end to end: the primitive graph computes the model.
#include "fission/fission_test_util.hpp"

namespace orchid {
namespace {

using namespace fission_test;

// ---------------------------------------------------------------- zoo end to end

std::vector<std::string> zoo_models() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(ORCHID_MODELS_DIR)) {
    if (entry.path().extension() == ".onnx") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class FissionZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(FissionZoo, PrimitiveGraphComputesTheModel) {
  const std::string path = (fs::path(ORCHID_MODELS_DIR) / (GetParam() + ".onnx")).string();
  const Graph model = load_model(path).graph;
  if (const Node* dynamic = model.first_dynamic_node()) {
    // Detection post-processing (ssdlite320): refused, naming the first such node.
    try {
      (void)fission(model);
      FAIL() << "fission accepted data-dependent shapes";
    } catch (const UnsupportedError& e) {
      EXPECT_NE(std::string(e.what()).find(dynamic->describe()), std::string::npos) << e.what();
    }
    return;
  }
  const FissionResult r = fission(model);
  for (const Node& node : r.graph.nodes) {
    ASSERT_TRUE(is_primitive(node)) << node.describe();
    ASSERT_TRUE(r.origin.count(node.name)) << node.name;
  }
  const std::size_t alternative_only = expect_main_graph_ignores_alternatives(r);
  const TensorMap feed = make_random_inputs(model, 0);
  double worst = 0;
  EXPECT_TRUE(outputs_match(model, r.graph, feed, 2e-5, 1e-4, true, &worst));

  const auto hist = primitive_class_histogram(r.graph);
  std::size_t total = 0;
  for (const auto& [c, n] : hist) total += n;
  EXPECT_EQ(total, r.graph.nodes.size());
  std::string line =
      fmt::format("[fission] {}: {} ops -> {} primitives (", GetParam(), model.nodes.size(), total);
  for (const auto& [c, n] : hist) line += fmt::format(" {} {}", primitive_class_name(c), n);
  line += fmt::format(
      " ), {} of them only in {} softmax-matmul alternatives, max error {:.1e} of (1 + max|y|)",
      alternative_only, r.alternatives.size(), worst);
  std::cout << line << "\n";
  RecordProperty("primitives", static_cast<int>(total));
}

TEST(FissionZooAlternatives, AttentionModelsOfferReassociatedSoftmax) {
  for (const char* name : {"tiny_attention", "bert_base", "vit_b_16"}) {
    const std::string path = (fs::path(ORCHID_MODELS_DIR) / (std::string(name) + ".onnx")).string();
    if (!fs::exists(path)) continue;
    const Graph model = load_model(path).graph;
    const FissionResult r = fission(model);
    EXPECT_FALSE(r.alternatives.empty()) << name;
    if (std::string(name) == "tiny_attention") expect_alternatives_match(model, r, 0, 1e-5, 1e-3);
  }
}

TEST(FissionZooOnnx, PrimitiveGraphRoundTripsThroughOnnx) {
  // A primitive graph is an ordinary graph: it writes to ONNX and loads back unchanged
  // in behaviour (alternatives included, as dead nodes).
  const std::string path = (fs::path(ORCHID_MODELS_DIR) / "tiny_attention.onnx").string();
  const Graph model = load_model(path).graph;
  const FissionResult r = fission(model);
  const fs::path out = fs::temp_directory_path() / "orchid_fission_tiny_attention.onnx";
  write_onnx(r.graph, out.string());
  const Graph back = load_model(out.string()).graph;
  fs::remove(out);
  for (const Node& node : back.nodes) EXPECT_TRUE(is_primitive(node)) << node.describe();
  EXPECT_TRUE(outputs_match(model, back, make_random_inputs(model, 1), 1e-5, 1e-4));
}

INSTANTIATE_TEST_SUITE_P(FissionModels, FissionZoo, ::testing::ValuesIn(zoo_models()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace orchid
