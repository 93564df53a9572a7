// The GPU backend end to end without a GPU: for zoo models and all four plan kinds
// (optimal, operator-level, per-primitive, greedy-fusion), every kernel of the plan —
// linear ones included — is generated in the kernel dialect, compiled for OpenCL and
// run on the first OpenCL device (PoCL on the CPU), and every output must match the
// reference interpreter within 1e-4 + 1e-3 |ref| (codegen_test_util.hpp). Plans are
// orchestrated with the a100 device model, as `--device opencl` does. Big models carry
// "Long" in the test name (ctest label `long`).
#include <gtest/gtest.h>

#include "codegen/opencl_executor.hpp"
#include "codegen/plan_codegen.hpp"
#include "codegen_test_util.hpp"
#include "eval/random_inputs.hpp"

namespace orchid::codegen {
namespace {

void check_model(const std::string& name) {
  std::string why;
  if (!OpenCLExecutor::available(&why)) GTEST_SKIP() << why;
  const LoadedModel model = test::load_zoo_model(name);
  if (const Node* dynamic = model.graph.first_dynamic_node()) {
    // Detection post-processing: the static part (backbone, heads) is what runs.
    (void)dynamic;
    GTEST_SKIP() << name << " has data-dependent shapes";
  }
  const Orchestration o = test::orchestrate_for_a100(model.graph);
  const TensorMap feed = make_random_inputs(model.graph, 0);
  const TensorMap expected = ReferenceInterpreter(model.graph).run(feed);
  for (const Plan* plan : {&o.optimal, &o.operator_level, &o.per_primitive, &o.greedy}) {
    const std::string where = name + " / " + plan->kind;
    const DeviceProgram program =
        generate_device_program(o.fission.graph, *plan, o.fission.alternatives, Target::OpenCL);
    OpenCLExecutor executor(program);
    for (int round = 0; round < 2; ++round) {  // a second run reuses every buffer
      test::expect_close(executor.run(feed), expected, where);
    }
  }
}

class OpenCLZoo : public ::testing::TestWithParam<std::string> {};
TEST_P(OpenCLZoo, AllPlanKindsMatchReference) {
  check_model(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Zoo, OpenCLZoo,
                         ::testing::Values("tiny_mlp", "tiny_conv", "tiny_attention",
                                           "tiny_resize_pad", "tiny_shape_plumbing"));

class OpenCLZooLong : public ::testing::TestWithParam<std::string> {};
TEST_P(OpenCLZooLong, AllPlanKindsMatchReference) {
  check_model(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Zoo, OpenCLZooLong,
                         ::testing::Values("mobilenet_v2", "mobilenet_v2_opset11", "resnet50",
                                           "candy", "yolox_nano", "segformer_b0", "bert_base",
                                           "vit_b_16"));

}  // namespace
}  // namespace orchid::codegen
