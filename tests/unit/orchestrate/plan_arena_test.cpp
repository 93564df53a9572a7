// Arena offsets of a plan whose kernels recompute a tensor (Korch's fission lets two
// kernels both compute a shared intermediate, as the measured-cost plan of YOLOX-nano's
// Focus slices did): the tensor lives until its last writer, so no tensor that the second
// writer produces shares its bytes, and the plan passes the validation `run --plan` does.
#include <gtest/gtest.h>

#include "orchestrate/plan.hpp"
#include "orchestrate/plan_import.hpp"
#include "runtime/small_graph.hpp"

namespace orchid {
namespace {

using runtime_test::i64;
using runtime_test::make_graph;

TEST(PlanArena, ARecomputedTensorLivesUntilItsLastWriter) {
  // s3 = x[:, 0:4]; s5 = s3[:, 0:2] (kernel A); s4 = s3[:, 2:4] (kernel B, recomputing s3);
  // y = Concat(s5, s4) (kernel C). Kernel B writes s3 again after A's last use of it.
  const Graph g = make_graph(
      {{"x", {1, 8, 16, 16}}},
      {{"a0", i64({1}, {0})}, {"a2", i64({1}, {2})}, {"a4", i64({1}, {4})}, {"ax", i64({1}, {1})}},
      {{"Slice", {"x", "a0", "a4", "ax"}, {"s3"}},
       {"Slice", {"s3", "a0", "a2", "ax"}, {"s5"}},
       {"Slice", {"s3", "a2", "a4", "ax"}, {"s4"}},
       {"Concat", {"s5", "s4"}, {"y"}, {{"axis", std::int64_t{1}}}}},
      {"y"});
  const PrimitiveGraphIndex index(g, {});
  const auto plan = build_plan(
      index, {}, {KernelChoice{{0, 1}, 1.0}, KernelChoice{{0, 2}, 1.0}, KernelChoice{{3}, 1.0}},
      "test");
  ASSERT_TRUE(plan);
  const ArenaSlot* s3 = nullptr;
  const ArenaSlot* s4 = nullptr;
  for (const auto& s : plan->arena) {
    if (s.tensor == "s3") s3 = &s;
    if (s.tensor == "s4") s4 = &s;
  }
  ASSERT_TRUE(s3 && s4);
  EXPECT_GE(s3->last_kernel, s4->first_kernel);
  EXPECT_TRUE(s3->offset + s3->bytes <= s4->offset || s4->offset + s4->bytes <= s3->offset);
  EXPECT_NO_THROW(validate_plan(*plan, g, {}, "plan"));
}

}  // namespace
}  // namespace orchid
