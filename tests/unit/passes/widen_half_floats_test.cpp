// f16/bf16 models on the CPU plan executor through passes/widen_half_floats: the widened
// plan's outputs, cast back to the model's dtypes, against the reference interpreter
// (which rounds every tensor to its 16-bit dtype). Tolerance per output:
// |plan - ref| <= tol * (1 + max|ref|), tol 1e-2 for f16 and 4e-2 for bf16 (a few units
// of the last place of the 16-bit results; the plan skips the intermediate roundings).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "cost/cost_model.hpp"
#include "eval/random_inputs.hpp"
#include "orchestrate/orchestrator.hpp"
#include "passes/load_model.hpp"
#include "passes/widen_half_floats.hpp"
#include "runtime/plan_executor.hpp"
#include "test_config_roots.hpp"

namespace orchid {
namespace {

std::string model(const char* name) {
  return std::string(ORCHID_TEST_DATA_DIR) + "/models/" + name + ".onnx";
}

void expect_widened_plan_matches(const char* name, double tol) {
  SCOPED_TRACE(name);
  const LoadedModel loaded = load_model(model(name));
  const Graph& g = loaded.graph;
  ASSERT_TRUE(has_half_floats(g));
  const Graph widened = widen_half_floats(g);
  EXPECT_FALSE(has_half_floats(widened));
  EXPECT_EQ(widened.inputs, g.inputs);
  EXPECT_EQ(widened.outputs, g.outputs);

  const auto cost_model = make_analytic_cost_model(load_device_spec("cpu", test::source_configs()));
  const Orchestration o = orchestrate(widened, *cost_model);
  const TensorMap feed = make_random_inputs(g, 5);
  const TensorMap expected = ReferenceInterpreter(g).run(feed);
  PlanExecutor executor(o.fission.graph, o.optimal, o.fission.alternatives);
  const TensorMap got = narrow_outputs(g, executor.run(widen_feed(feed)));
  for (const auto& [out, want] : expected) {
    const Tensor& have = got.at(out);
    EXPECT_EQ(have.dtype(), want.dtype()) << out;
    ASSERT_EQ(have.shape(), want.shape()) << out;
    double peak = 0, worst = 0;
    for (std::int64_t i = 0; i < want.numel(); ++i) {
      peak = std::max(peak, std::fabs(want.get_as_double(i)));
      worst = std::max(worst, std::fabs(have.get_as_double(i) - want.get_as_double(i)));
    }
    std::cout << "[widen] " << name << " / " << out << ": max |plan - ref| " << worst
              << ", max |ref| " << peak << "\n";
    EXPECT_LE(worst, tol * (1 + peak)) << out;
  }
}

TEST(WidenHalfFloats, Fp16ConvertedZooModelsRunOnThePlanExecutor) {
  expect_widened_plan_matches("tiny_conv_fp16", 1e-2);       // fp32 I/O, Casts at the boundary
  expect_widened_plan_matches("tiny_attention_fp16", 1e-2);  // fp16 I/O
  expect_widened_plan_matches("mlp_fp16", 1e-2);
}

TEST(WidenHalfFloats, Bf16ModelRunsOnThePlanExecutor) {
  expect_widened_plan_matches("conv_bf16", 4e-2);
}

TEST(WidenHalfFloats, CastsToHalfBecomeCastsToF32) {
  const Graph widened = widen_half_floats(load_model(model("tiny_conv_fp16")).graph);
  int casts = 0;
  for (const Node& node : widened.nodes) {
    if (node.op_type != "Cast") continue;
    ++casts;
    EXPECT_EQ(node.attr_int("to", 0), 1) << node.describe();
  }
  EXPECT_GT(casts, 0);
}

}  // namespace
}  // namespace orchid
