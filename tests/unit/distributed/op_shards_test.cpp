// Splitting a layer's linear op (op_shards.hpp): for every strategy and part count the
// parts, run on the reference interpreter and combined as the runner combines them
// (concatenated or summed), equal the whole op (|d| <= 1e-5 + 1e-5 |ref|); and the
// mapper's view of what the runner splits (cpu_cluster_cost.hpp) agrees with it on
// the zoo's graphs.
#include <gtest/gtest.h>

#include <cmath>

#include "distributed/op_shards.hpp"
#include "distributed/tensor_slices.hpp"
#include "eval/random_inputs.hpp"
#include "eval/reference_interpreter.hpp"
#include "ir/op_registry.hpp"
#include "mapping/cpu_cluster_cost.hpp"
#include "mapping/workload_from_graph.hpp"
#include "passes/load_model.hpp"

namespace orchid::distributed {
namespace {

using mapping::Strategy;

Tensor random_tensor(Shape shape, std::uint64_t seed) {
  Tensor t(DType::F32, shape);
  float* p = t.data<float>();
  std::uint64_t s = seed * 2654435761u + 1;
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = static_cast<float>((s >> 33) % 2001) / 1000.0f - 1.0f;
  }
  return t;
}

// A one-op graph: x (runtime) op w (constant) [+ b].
Graph one_op(const std::string& op, Shape x, Shape w, std::optional<Shape> b,
             std::map<std::string, Attribute> attributes) {
  Graph g;
  g.set_type("x", DType::F32, x);
  g.inputs = {"x"};
  g.set_constant("w", random_tensor(w, 1));
  Node n;
  n.name = "op";
  n.op_type = op;
  n.inputs = {"x", "w"};
  if (b) {
    g.set_constant("b", random_tensor(*b, 2));
    n.inputs.push_back("b");
  }
  n.outputs = {"y"};
  n.attributes = std::move(attributes);
  g.nodes = {n};
  g.outputs = {"y"};
  infer_shapes(g);
  return g;
}

void expect_parts_equal_whole(const Graph& g, Strategy s, int parts) {
  const Node& node = g.nodes[0];
  ASSERT_TRUE(can_shard_op(g, node, s, parts)) << mapping::strategy_name(s) << " " << parts;
  const Tensor x = random_tensor(g.tensor("x").shape, 3);
  const Tensor whole = ReferenceInterpreter(g).run({{"x", x}}).at("y");
  std::vector<Tensor> results;
  int out_axis = -1;
  for (int p = 0; p < parts; ++p) {
    const OpShard shard = shard_op(g, node, s, p, parts);
    const Tensor block =
        shard.in_axis < 0 ? x : slice_axis(x, shard.in_axis, shard.in_begin, shard.in_end);
    ASSERT_EQ(block.shape(), shard.in_shape);
    results.push_back(ReferenceInterpreter(shard.graph).run({{"x", block}}).at("y"));
    EXPECT_EQ(results.back().shape(), shard.out_shape);
    out_axis = shard.out_axis;
  }
  const Tensor combined = out_axis < 0 ? sum_f32(results) : concat_axis(results, out_axis);
  ASSERT_EQ(combined.shape(), whole.shape());
  for (std::int64_t i = 0; i < whole.numel(); ++i) {
    const float r = whole.data<float>()[i], d = combined.data<float>()[i];
    ASSERT_LE(std::fabs(r - d), 1e-5 + 1e-5 * std::fabs(r))
        << mapping::strategy_name(s) << " " << parts << " parts, element " << i;
  }
}

const Strategy kSplits[] = {Strategy::OutChannel, Strategy::InChannelAllReduce,
                            Strategy::InChannelReduceScatter, Strategy::Spatial};

TEST(OpShards, ConvolutionsSplitEveryWay) {
  using Ints = std::vector<std::int64_t>;
  const Graph same =
      one_op("Conv", {1, 5, 9, 7}, {6, 5, 3, 3}, Shape{6}, {{"pads", Ints{1, 1, 1, 1}}});
  const Graph strided = one_op("Conv", {1, 4, 11, 8}, {5, 4, 3, 3}, std::nullopt,
                               {{"pads", Ints{0, 1, 2, 1}}, {"strides", Ints{2, 2}}});
  const Graph dilated = one_op("Conv", {1, 4, 12, 6}, {4, 4, 3, 2}, Shape{4},
                               {{"dilations", Ints{2, 1}}, {"pads", Ints{2, 0, 1, 0}}});
  for (const Graph* g : {&same, &strided, &dilated}) {
    for (int parts : {2, 3, 4}) {
      for (Strategy s : kSplits) expect_parts_equal_whole(*g, s, parts);
    }
  }
  // Depthwise: only row blocks (a channel split would also split the groups).
  const Graph depthwise = one_op("Conv", {1, 6, 10, 10}, {6, 1, 3, 3}, Shape{6},
                                 {{"group", std::int64_t{6}}, {"pads", Ints{1, 1, 1, 1}}});
  expect_parts_equal_whole(depthwise, Strategy::Spatial, 3);
  EXPECT_FALSE(can_shard_op(depthwise, depthwise.nodes[0], Strategy::OutChannel, 2));
  EXPECT_FALSE(can_shard_op(same, same.nodes[0], Strategy::OutChannel, 7));  // 6 channels
}

TEST(OpShards, GemmAndMatMulSplitEveryWay) {
  const Graph gemm = one_op("Gemm", {6, 10}, {8, 10}, Shape{8}, {{"transB", std::int64_t{1}}});
  const Graph matmul = one_op("MatMul", {1, 7, 9}, {9, 5}, std::nullopt, {});
  for (const Graph* g : {&gemm, &matmul}) {
    for (int parts : {2, 3}) {
      for (Strategy s : kSplits) expect_parts_equal_whole(*g, s, parts);
    }
  }
  const Graph vector_gemm = one_op("Gemm", {1, 10}, {10, 4}, Shape{4}, {});
  EXPECT_FALSE(can_shard_op(vector_gemm, vector_gemm.nodes[0], Strategy::Spatial, 2));  // 1 row
}

// The evaluator prices a sharded layer as split only where the runner splits it.
TEST(OpShards, TheMapperKnowsWhichLayersTheRunnerSplits) {
  for (const char* model : {"mobilenet_v2", "tiny_attention", "tiny_mlp"}) {
    const LoadedModel loaded = load_model(std::string(ORCHID_MODELS_DIR) + "/" + model + ".onnx");
    const Graph& g = loaded.graph;
    const mapping::Workload w = mapping::extract_workload(g, 2, model);
    for (const mapping::Layer& layer : w.layers) {
      for (Strategy s : kSplits) {
        for (int p : {2, 4}) {
          if (!mapping::strategy_valid(layer, s, p)) continue;
          EXPECT_EQ(mapping::cpu_runner_splits(layer, s, p),
                    can_shard_op(g, g.nodes[layer.nodes[0]], s, p))
              << model << " " << layer.name << " " << mapping::strategy_name(s) << " " << p;
        }
      }
    }
  }
}

}  // namespace
}  // namespace orchid::distributed
