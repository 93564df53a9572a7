// Searches honour their time limits on absurd inputs: kernel orchestration of a Sum with
// 10,000 inputs, and the mapping GA on a workload of thousands of layers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include <onnx/onnx_pb.h>

#include "cost/cost_model.hpp"
#include "mapping/baselines.hpp"
#include "mapping/case_file.hpp"
#include "mapping/genetic_search.hpp"
#include "mapping/system.hpp"
#include "mapping/workload.hpp"
#include "onnx/proto_io.hpp"
#include "orchestrate/orchestrator.hpp"
#include "passes/load_model.hpp"
#include "test_config_roots.hpp"
#include "util/error.hpp"

// GCC 12 warns -Wrestrict inside libstdc++ for protobuf's string setters inlined here
// (GCC bug 105329, a false positive).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace orchid {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// y = Sum(x0, ..., x{n-1}), every input float[4].
std::string sum_model(int n) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("wide_sum");
  auto* sum = g->add_node();
  sum->set_op_type("Sum");
  sum->set_name("sum");
  for (int i = 0; i < n; ++i) {
    auto* in = g->add_input();
    in->set_name(fmt::format("x{}", i));
    auto* type = in->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto::FLOAT);
    type->mutable_shape()->add_dim()->set_dim_value(4);
    sum->add_input(in->name());
  }
  sum->add_output("y");
  g->add_output()->set_name("y");
  const std::string file =
      (fs::temp_directory_path() / fmt::format("orchid_wide_sum_{}.onnx", ::getpid())).string();
  save_model_proto(m, file);
  return file;
}

TEST(SearchTimeLimit, OrchestratingASumOfTenThousandInputsStops) {
  const std::string file = sum_model(10000);
  const LoadedModel loaded = load_model(file);
  fs::remove(file);
  const auto model = make_analytic_cost_model(load_device_spec("a100", test::source_configs()));
  OrchestrateOptions options;
  options.time_limit_s = 5;
  const auto start = Clock::now();
  const Orchestration o = orchestrate(loaded.graph, *model, options);
  const double took = seconds_since(start);
  EXPECT_FALSE(o.optimal.kernels.empty());
  // Enumeration and costing come on top of the solver's share; generous for a loaded CI.
  EXPECT_LT(took, 60.0);
}

// 3,000 chained convolutions: one GA generation takes far longer than the limit.
std::string long_chain(int layers) {
  std::string text = "[[modality]]\nlayers = [\n";
  for (int i = 0; i < layers; ++i)
    text += "  { type = \"conv\", M = 64, N = 64, R = 56, C = 56, K = 3 },\n";
  return text + "]\n";
}

TEST(SearchTimeLimit, MappingSearchStopsAtItsLimit) {
  using namespace orchid::mapping;
  const System sys = load_system(std::string(ORCHID_SOURCE_DIR) + "/configs/systems/fpga8.toml");
  const Workload w = parse_case(long_chain(3000), "long.toml", 1);
  const Evaluator ev(w, sys);
  SearchOptions options;
  options.time_limit_s = 2;
  options.threads = 2;
  const auto start = Clock::now();
  const SearchResult r = genetic_search(ev, options, {});
  const double took = seconds_since(start);
  EXPECT_FALSE(r.mapping.groups.empty());
  // One evaluation per thread may be under way when the limit passes.
  EXPECT_LT(took, 15.0);
  EXPECT_LT(r.seconds, 15.0);
}

TEST(SearchTimeLimit, AbsurdWorkloadsAreRefusedNotRanked) {
  using namespace orchid::mapping;
  const System sys = load_system(std::string(ORCHID_SOURCE_DIR) + "/configs/systems/fpga4.toml");
  const Workload w = parse_case(
      "[[modality]]\nlayers = [{ type = \"conv\", M = 16777216, N = 16777216, R = 16777216, C = "
      "16777216, K = 16777216 }]\n",
      "absurd.toml", 1);
  try {
    const Evaluator ev(w, sys);
    FAIL() << "an absurd workload was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("per inference"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace orchid
