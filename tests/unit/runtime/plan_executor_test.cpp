// The plan executor against the reference interpreter: for zoo models and all four plan
// kinds (optimal, operator-level, per-primitive, greedy-fusion) every output must match
// the reference within |plan - ref| <= 1e-4 + 1e-3 * |ref| (oneDNN sums in a different
// order than the reference kernels). Small models run in CI; the big ones carry "Long"
// in their test name and run under the ctest label `long`.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "cost/cost_model.hpp"
#include "eval/random_inputs.hpp"
#include "eval/reference_interpreter.hpp"
#include "orchestrate/orchestrator.hpp"
#include "passes/load_model.hpp"
#include "runtime/plan_executor.hpp"
#include "test_config_roots.hpp"

namespace fs = std::filesystem;

namespace orchid {
namespace {

void check_model(const std::string& name) {
  const std::string path = (fs::path(ORCHID_MODELS_DIR) / (name + ".onnx")).string();
  const LoadedModel model = load_model(path);
  const auto cost_model = make_analytic_cost_model(load_device_spec("cpu", test::source_configs()));
  OrchestrateOptions options;
  options.time_limit_s = 20;
  const Orchestration o = orchestrate(model.graph, *cost_model, options);
  const TensorMap feed = make_random_inputs(model.graph, 0);
  const TensorMap expected = ReferenceInterpreter(model.graph).run(feed);
  for (const Plan* plan : {&o.optimal, &o.operator_level, &o.per_primitive, &o.greedy}) {
    SCOPED_TRACE(name + " / " + plan->kind);
    PlanExecutor executor(o.fission.graph, *plan, o.fission.alternatives);
    for (int round = 0; round < 2; ++round) {  // a second run reuses arena and scratch
      const TensorMap got = executor.run(feed);
      ASSERT_EQ(got.size(), expected.size());
      for (const auto& [out, want] : expected) {
        const Tensor& have = got.at(out);
        ASSERT_EQ(have.shape(), want.shape()) << out;
        std::int64_t bad = 0;
        for (std::int64_t i = 0; i < want.numel(); ++i) {
          const double b = want.get_as_double(i);
          const double a = have.get_as_double(i);
          if (!(std::fabs(a - b) <= 1e-4 + 1e-3 * std::fabs(b))) {
            if (bad++ < 3) ADD_FAILURE() << out << "[" << i << "]: " << a << " vs " << b;
          }
        }
        EXPECT_EQ(bad, 0) << out << " mismatching elements";
      }
    }
  }
}

class PlanExecutorModel : public ::testing::TestWithParam<std::string> {};
TEST_P(PlanExecutorModel, AllPlanKindsMatchReference) {
  check_model(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Zoo, PlanExecutorModel,
                         ::testing::Values("tiny_mlp", "tiny_conv", "tiny_attention",
                                           "tiny_resize_pad", "tiny_shape_plumbing", "mobilenet_v2",
                                           "resnet50"));

class PlanExecutorLongModel : public ::testing::TestWithParam<std::string> {};
TEST_P(PlanExecutorLongModel, AllPlanKindsMatchReference) {
  check_model(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Zoo, PlanExecutorLongModel,
                         ::testing::Values("bert_base", "vit_b_16", "segformer_b0", "candy",
                                           "yolox_nano"));

}  // namespace
}  // namespace orchid
