// Helpers for per-op tests: build a one-node graph, infer its types, run it with the
// reference interpreter, and compare tensors.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "eval/reference_interpreter.hpp"
#include "ir/graph.hpp"
#include "ir/op_registry.hpp"

namespace orchid::testing {

struct OpInput {
  std::string name;
  Tensor value;
  bool constant = false;  // constants become graph weights (needed for shape inputs)
};

// A graph with one node of `op_type`; inputs named as given ("" = omitted optional),
// outputs named y0, y1, ...
inline Graph single_op_graph(const std::string& op_type, const std::vector<OpInput>& inputs,
                             std::map<std::string, Attribute> attributes = {},
                             std::size_t num_outputs = 1, std::int64_t opset = 17) {
  Graph g;
  g.name = op_type + "_test";
  g.opset = opset;
  Node node;
  node.name = "n0";
  node.op_type = op_type;
  node.attributes = std::move(attributes);
  for (const auto& in : inputs) {
    node.inputs.push_back(in.name);
    if (in.name.empty()) continue;
    if (in.constant) {
      g.set_constant(in.name, in.value);
    } else {
      g.set_type(in.name, in.value.dtype(), in.value.shape());
      g.inputs.push_back(in.name);
    }
  }
  for (std::size_t i = 0; i < num_outputs; ++i) {
    // Not "y" + to_string(i): GCC 12 at -O3 warns about it (a false -Wrestrict).
    node.outputs.push_back(std::string("y").append(std::to_string(i)));
    g.outputs.push_back(node.outputs.back());
  }
  g.nodes.push_back(node);
  infer_shapes(g);
  g.validate();
  return g;
}

// Runs a single op; returns its outputs in order.
inline std::vector<Tensor> run_single_op(const std::string& op_type,
                                         const std::vector<OpInput>& inputs,
                                         std::map<std::string, Attribute> attributes = {},
                                         std::size_t num_outputs = 1, std::int64_t opset = 17) {
  Graph g = single_op_graph(op_type, inputs, std::move(attributes), num_outputs, opset);
  TensorMap feed;
  for (const auto& in : inputs) {
    if (!in.name.empty() && !in.constant) feed.emplace(in.name, in.value);
  }
  ReferenceInterpreter interpreter(g);
  TensorMap out = interpreter.run(feed);
  std::vector<Tensor> result;
  for (const auto& name : g.outputs) result.push_back(out.at(name));
  return result;
}

inline Tensor f32(Shape shape, std::vector<float> values) {
  return Tensor::from_vector<float>(std::move(shape), values);
}
inline Tensor i64(Shape shape, std::vector<std::int64_t> values) {
  return Tensor::from_vector<std::int64_t>(std::move(shape), values);
}

// |a - b| <= atol + rtol * |b| elementwise, same dtype and shape.
inline ::testing::AssertionResult tensors_close(const Tensor& actual, const Tensor& expected,
                                                double rtol = 1e-5, double atol = 1e-6) {
  if (actual.dtype() != expected.dtype()) {
    return ::testing::AssertionFailure()
           << "dtype " << dtype_name(actual.dtype()) << " vs " << dtype_name(expected.dtype());
  }
  if (actual.shape() != expected.shape()) {
    return ::testing::AssertionFailure() << "shape " << shape_to_string(actual.shape()) << " vs "
                                         << shape_to_string(expected.shape());
  }
  for (std::int64_t i = 0; i < actual.numel(); ++i) {
    const double a = actual.get_as_double(i);
    const double b = expected.get_as_double(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (std::isinf(a) && std::isinf(b) && (a > 0) == (b > 0)) continue;
    if (!(std::fabs(a - b) <= atol + rtol * std::fabs(b))) {
      return ::testing::AssertionFailure() << "element " << i << ": " << a << " vs " << b;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace orchid::testing
