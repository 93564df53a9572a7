// Shared by the GPU backend tests: build small primitive graphs and plans, compare
// outputs with the reference interpreter.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "codegen/cuda_backend.hpp"
#include "cost/cost_model.hpp"
#include "eval/reference_interpreter.hpp"
#include "fission/kernel_view.hpp"
#include "ir/op_registry.hpp"
#include "orchestrate/orchestrator.hpp"
#include "orchestrate/plan.hpp"
#include "passes/load_model.hpp"
#include "test_config_roots.hpp"

namespace orchid::codegen::test {

// Device results agree with the reference when |got - want| <= 1e-4 + 1e-3 |want|
// elementwise, or both NaN (device kernels sum in a different order; transcendental functions of
// OpenCL/CUDA are within a few ulp, the reference computes them in double).
inline void expect_close(const TensorMap& got, const TensorMap& expected,
                         const std::string& where) {
  ASSERT_EQ(got.size(), expected.size()) << where;
  for (const auto& [out, want] : expected) {
    ASSERT_TRUE(got.count(out)) << where << ": output " << out << " missing";
    const Tensor& have = got.at(out);
    ASSERT_EQ(have.shape(), want.shape()) << where << ": " << out;
    std::int64_t bad = 0;
    for (std::int64_t i = 0; i < want.numel(); ++i) {
      const double b = want.get_as_double(i);
      const double a = have.get_as_double(i);
      if (std::isnan(a) && std::isnan(b)) continue;  // NaN where the reference has NaN
      if (!(std::fabs(a - b) <= 1e-4 + 1e-3 * std::fabs(b))) {
        if (bad++ < 3)
          ADD_FAILURE() << where << ": " << out << "[" << i << "]: " << a << " vs " << b;
      }
    }
    EXPECT_EQ(bad, 0) << where << ": " << out << " mismatching elements of " << want.numel();
  }
}

// Builds a primitive graph node by node; shapes are inferred.
class GraphBuilder {
 public:
  std::string input(const std::string& name, Shape shape, DType dtype = DType::F32) {
    g_.set_type(name, dtype, std::move(shape));
    g_.inputs.push_back(name);
    return name;
  }
  std::string constant(const std::string& name, Tensor value) {
    g_.set_constant(name, std::move(value));
    return name;
  }
  std::string random_constant(const std::string& name, Shape shape) {
    Tensor t(DType::F32, shape);
    float* p = t.data<float>();
    for (std::int64_t i = 0; i < t.numel(); ++i)
      p[i] = static_cast<float>((i * 37 % 101) - 50) / 60.0f;
    return constant(name, std::move(t));
  }
  std::string node(const std::string& op, std::vector<std::string> inputs,
                   std::map<std::string, Attribute> attributes = {}) {
    return node_outputs(op, std::move(inputs), std::move(attributes), 1)[0];
  }
  // A node with `count` outputs (TopK: values, indices).
  std::vector<std::string> node_outputs(const std::string& op, std::vector<std::string> inputs,
                                        std::map<std::string, Attribute> attributes,
                                        std::size_t count) {
    Node n;
    n.name = "n" + std::to_string(g_.nodes.size());
    n.op_type = op;
    n.inputs = std::move(inputs);
    n.attributes = std::move(attributes);
    for (std::size_t i = 0; i < count; ++i)
      n.outputs.push_back(n.name + "_out" + (i ? std::to_string(i) : ""));
    g_.nodes.push_back(n);
    infer_node_types(g_, g_.nodes.back());
    return n.outputs;
  }
  Graph finish(std::vector<std::string> outputs) {
    g_.outputs = std::move(outputs);
    g_.validate();
    return g_;
  }

 private:
  Graph g_;
};

// One plan kernel per group of nodes, arena slots laid out one after another, each
// `shift` bytes past a 64-byte boundary (4: no arena tensor is 16-byte aligned).
inline Plan plan_of(const Graph& g, const std::vector<std::vector<std::size_t>>& groups,
                    std::int64_t shift = 0) {
  Plan plan;
  plan.kind = "test";
  for (const auto& nodes : groups) {
    const KernelView v = make_kernel_view(g, nodes);
    PlannedKernel pk;
    pk.nodes = v.nodes;
    pk.inputs = v.inputs;
    pk.sources = v.inputs;
    pk.outputs = v.outputs;
    for (const auto& t : v.outputs) {
      ArenaSlot s;
      s.tensor = t;
      s.offset = plan.arena_bytes + shift;
      s.bytes = tensor_bytes(g, t);
      plan.arena_bytes += (s.bytes + shift + 63) / 64 * 64;
      plan.arena.push_back(s);
    }
    plan.kernels.push_back(std::move(pk));
  }
  return plan;
}

// Plan-kernel groups for plan_of: all nodes in one kernel, or one kernel per node.
inline std::vector<std::vector<std::size_t>> fused_groups(const Graph& g) {
  std::vector<std::size_t> all;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) all.push_back(i);
  return {all};
}
inline std::vector<std::vector<std::size_t>> per_node_groups(const Graph& g) {
  std::vector<std::vector<std::size_t>> each;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) each.push_back({i});
  return each;
}

// Whether a CUDA GPU can run the device programs of a test. The unit tests run here on
// PoCL only; on a GPU machine (scripts/gpu-check.sh) they also run each program on the
// GPU, and ORCHID_REQUIRE_GPU=1 makes a missing GPU a failure instead of a skip.
inline bool cuda_gpu_present() {
  static const std::string missing = [] {
    std::string why;
    return detect_cuda_gpu(&why) ? std::string() : why;
  }();
  const char* required = std::getenv("ORCHID_REQUIRE_GPU");
  if (!missing.empty() && required && std::string(required) == "1") {
    ADD_FAILURE() << "ORCHID_REQUIRE_GPU=1 but no CUDA GPU: " << missing;
  }
  return missing.empty();
}

// models/NAME.onnx, imported.
inline LoadedModel load_zoo_model(const std::string& name) {
  return load_model((std::filesystem::path(ORCHID_MODELS_DIR) / (name + ".onnx")).string());
}

// The model's plans, orchestrated with the a100 device model as `--device opencl|cuda`
// does (20 s BLP limit).
inline Orchestration orchestrate_for_a100(const Graph& model) {
  const auto cost_model =
      make_analytic_cost_model(load_device_spec("a100", orchid::test::source_configs()));
  OrchestrateOptions options;
  options.time_limit_s = 20;
  return orchestrate(model, *cost_model, options);
}

}  // namespace orchid::codegen::test
