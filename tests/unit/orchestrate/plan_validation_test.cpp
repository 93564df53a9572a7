// `run --plan` trusts nothing in the plan file: every way a plan can disagree with the
// model (order, producers, arena slots, sizes, field types) is one error naming it.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <functional>

#include <nlohmann/json.hpp>

#include "cost/cost_model.hpp"
#include "orchestrate/orchestrator.hpp"
#include "orchestrate/plan_export.hpp"
#include "orchestrate/plan_import.hpp"
#include "passes/load_model.hpp"
#include "test_config_roots.hpp"
#include "util/error.hpp"

namespace orchid {
namespace {

using nlohmann::json;

class PlanValidation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const LoadedModel loaded = load_model(std::string(ORCHID_MODELS_DIR) + "/tiny_mlp.onnx");
    const auto model = make_analytic_cost_model(load_device_spec("a100", test::source_configs()));
    orchestration_ = new Orchestration(orchestrate(loaded.graph, *model));
    // Per-primitive: several kernels and arena slots to reorder and shrink.
    plan_ =
        new json(json::parse(plan_to_json(*orchestration_, orchestration_->per_primitive, "m")));
  }
  static void TearDownTestSuite() {
    delete orchestration_;
    delete plan_;
  }

  // The error plan_from_json gives for the plan after `edit`, or "" when it loads.
  static std::string error_after(const std::function<void(json&)>& edit) {
    json j = *plan_;
    edit(j);
    try {
      plan_from_json(j.dump(), orchestration_->fission.graph, orchestration_->fission.alternatives,
                     "plan 'p.json'");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  static Orchestration* orchestration_;
  static json* plan_;
};

Orchestration* PlanValidation::orchestration_ = nullptr;
json* PlanValidation::plan_ = nullptr;

#define EXPECT_PLAN_ERROR(edit, text)                               \
  do {                                                              \
    const std::string msg = error_after(edit);                      \
    EXPECT_NE(msg.find(text), std::string::npos) << "got: " << msg; \
    EXPECT_NE(msg.find("plan 'p.json'"), std::string::npos) << msg; \
  } while (0)

TEST_F(PlanValidation, TheWrittenPlanLoadsUnchanged) {
  ASSERT_GE((*plan_)["kernels"].size(), 3u);
  EXPECT_EQ(error_after([](json&) {}), "");
  for (const Plan* p : {&orchestration_->optimal, &orchestration_->greedy,
                        &orchestration_->operator_level, &orchestration_->per_primitive}) {
    EXPECT_NO_THROW(validate_plan(*p, orchestration_->fission.graph,
                                  orchestration_->fission.alternatives, p->kind))
        << p->kind;
  }
}

TEST_F(PlanValidation, KernelOrderAndProducersAreChecked) {
  EXPECT_PLAN_ERROR([](json& j) { j["kernels"] = json::array(); }, "is not produced");
  EXPECT_PLAN_ERROR([](json& j) { std::reverse(j["kernels"].begin(), j["kernels"].end()); },
                    "before any kernel writes it");
  EXPECT_PLAN_ERROR([](json& j) { j["kernels"].erase(0); }, "before any kernel writes it");
  EXPECT_PLAN_ERROR([](json& j) { j["kernels"][1]["sources"] = json::array(); }, "sources");
  EXPECT_PLAN_ERROR([](json& j) { j["kernels"][0]["primitives"] = json::array(); },
                    "has no primitives");
  EXPECT_PLAN_ERROR([](json& j) { j["kernels"][0]["primitives"].push_back(100000); },
                    "'primitives'[");
  EXPECT_PLAN_ERROR([](json& j) { j["kernels"][0]["outputs"] = json::array({"x"}); },
                    "inputs/outputs");
  EXPECT_PLAN_ERROR([](json& j) { j["kernels"][1]["sources"][0] = "not_a_tensor"; },
                    "neither it nor an equal alternative");
}

TEST_F(PlanValidation, ArenaSlotsMustHoldTheirTensorsWithoutOverlap) {
  EXPECT_PLAN_ERROR([](json& j) { j["arena"][0]["bytes"] = 4; }, "the tensor needs");
  EXPECT_PLAN_ERROR([](json& j) { j["arena"][0]["offset"] = j["arena_bytes"]; }, "lies outside");
  EXPECT_PLAN_ERROR([](json& j) { j["arena"][0]["offset"] = INT64_MAX - 8; }, "lies outside");
  EXPECT_PLAN_ERROR([](json& j) { j["arena_bytes"] = INT64_MAX; }, "memory budget");
  EXPECT_PLAN_ERROR([](json& j) { j["arena_bytes"] = -1; }, "'arena_bytes'");
  EXPECT_PLAN_ERROR([](json& j) { j["arena"].erase(0); }, "has no arena slot");
  EXPECT_PLAN_ERROR([](json& j) { j["arena"].push_back(j["arena"][0]); }, "listed twice");
  // Every slot at offset 0: the first kernel's output is still live when the next writes.
  EXPECT_PLAN_ERROR(
      [](json& j) {
        std::int64_t most = 0;
        for (auto& s : j["arena"]) most = std::max(most, s["bytes"].get<std::int64_t>());
        for (auto& s : j["arena"]) s["offset"] = 0;
        j["arena_bytes"] = most;
      },
      "overlap while both are live");
}

TEST_F(PlanValidation, EveryFieldHasItsType) {
  EXPECT_EQ(error_after([](json& j) { j = json::array(); }).find("not an orchid plan") !=
                std::string::npos,
            true);
  EXPECT_PLAN_ERROR([](json& j) { j["arena_bytes"] = "big"; }, "'arena_bytes' is not an integer");
  EXPECT_PLAN_ERROR([](json& j) { j["arena_bytes"] = 1.5; }, "'arena_bytes' is not an integer");
  EXPECT_PLAN_ERROR([](json& j) { j["kernels"] = json::object(); }, "'kernels' is not an array");
  EXPECT_PLAN_ERROR([](json& j) { j["kernels"][0]["inputs"] = 3; }, "'inputs' is not an array");
  EXPECT_PLAN_ERROR([](json& j) { j["kernels"][0]["inputs"][0] = 3; }, "is not a string");
  EXPECT_PLAN_ERROR([](json& j) { j["kernels"][0]["cost_us"] = "fast"; }, "is not a number");
  EXPECT_PLAN_ERROR([](json& j) { j["arena"][0] = 7; }, "is not a JSON object");
  EXPECT_PLAN_ERROR([](json& j) { j["primitives"][0]["name"] = 1; }, "is not a string");
  EXPECT_PLAN_ERROR([](json& j) { j.erase("arena"); }, "has no 'arena'");
  const std::string garbage = [] {
    try {
      plan_from_json("{\"format\": ", orchestration_->fission.graph,
                     orchestration_->fission.alternatives, "plan 'p.json'");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  EXPECT_NE(garbage.find("not valid JSON"), std::string::npos) << garbage;
}

}  // namespace
}  // namespace orchid
