// A first post-op that adds a constant per output channel (a Conv's bias or a Gemm's C
// after fission) runs as the oneDNN primitive's bias; other additions stay binary post-ops.
// Either way the primitive computes what the graph means.
#include <gtest/gtest.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <cmath>
#include <vector>

#include "eval/random_inputs.hpp"
#include "eval/reference_interpreter.hpp"
#include "runtime/onednn_linear.hpp"
#include "runtime/onednn_memory.hpp"
#include "small_graph.hpp"

namespace orchid {
namespace {

using runtime_test::make_graph;
using runtime_test::pattern;

PostOp add(const std::string& operand) {
  return {PostOp::Kind::Binary, OnednnAlgorithm::BinaryAdd, 0, 0, operand};
}
const PostOp kRelu{PostOp::Kind::Eltwise, OnednnAlgorithm::EltwiseRelu, 0, 0, ""};

// Runs `op` (built for g.nodes[0], on the engine of `stream`) on `feed` and the graph's constants;
// compares its result with the reference interpreter's value of `result` (|d| <= 1e-4 + 1e-3
// |ref|).
void expect_runs_as_the_graph(LinearOp& op, dnnl::stream& stream, const Graph& g,
                              const TensorMap& feed, const std::vector<std::string>& operands,
                              const std::string& result) {
  const TensorMap want = ReferenceInterpreter(g).run(feed);
  auto value = [&](const std::string& t) -> const void* {
    return g.is_constant(t) ? g.tensor(t).data->raw() : feed.at(t).raw();
  };
  std::vector<std::vector<float>> copies;  // buffers of the reordered copies
  for (dnnl::memory* m : op.reordered_copies()) {
    copies.emplace_back(m->get_desc().get_size() / sizeof(float));
    m->set_data_handle(copies.back().data());
  }
  std::vector<const void*> extra;
  for (const auto& t : operands) extra.push_back(value(t));
  const Tensor& ref = want.at(result);
  std::vector<float> y(static_cast<std::size_t>(ref.numel()), NAN);
  const Node& node = g.nodes[0];
  op.run(stream, value(node.inputs[0]), value(node.inputs[1]), y.data(), extra);
  stream.wait();
  for (std::int64_t i = 0; i < ref.numel(); ++i) {
    const double r = ref.get_as_double(i);
    ASSERT_NEAR(y[static_cast<std::size_t>(i)], r, 1e-4 + 1e-3 * std::fabs(r)) << "element " << i;
  }
}

TEST(OnednnLinear, APerChannelAddRunsAsTheConvolutionsBias) {
  const Graph g =
      make_graph({{"x", {1, 8, 6, 6}}, {"r", {1, 16, 6, 6}}},
                 {{"w", pattern({16, 8, 3, 3})},
                  {"b", runtime_test::f32({1, 16, 1, 1}, std::vector<float>(16, 0.25f))}},
                 {{"Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<std::int64_t>{1, 1, 1, 1}}}},
                  {"Add", {"c", "b"}, {"cb"}},
                  {"Add", {"cb", "r"}, {"s"}},
                  {"Relu", {"s"}, {"y"}}},
                 {"y"});
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  PackedWeights packing;
  LinearOp op =
      make_linear(engine, stream, g, g.nodes[0], {add("b"), add("r"), kRelu}, {}, packing);
  EXPECT_EQ(op.bias_values, std::vector<float>(16, 0.25f));
  EXPECT_EQ(op.binary.size(), 1u);  // the residual only
  EXPECT_EQ(op.args.count(DNNL_ARG_BIAS), 1u);
  expect_runs_as_the_graph(op, stream, g, make_random_inputs(g, 5), {"b", "r"}, "y");
}

// Convolutions prefer NHWC wherever oneDNN has more than its reference kernel for it: on
// AVX2 too, where oneDNN's own choice, nChw8c, would pad these 12 channels to 16 (the
// tensors then stayed plain, reordered around the convolution). Under ctest this also runs
// with ONEDNN_MAX_CPU_ISA=AVX2.
TEST(OnednnLinear, ConvolutionsPreferNhwcWhereOneDnnHasAKernelForIt) {
  const Graph g = make_graph(
      {{"x", {1, 12, 20, 20}}}, {{"w", pattern({16, 12, 3, 3})}},
      {{"Conv", {"x", "w"}, {"y"}, {{"pads", std::vector<std::int64_t>{1, 1, 1, 1}}}}}, {"y"});
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const std::optional<ConvLayouts> l = conv_preferred_layouts(engine, g, g.nodes[0]);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->src, nhwc_desc({1, 12, 20, 20}));
  EXPECT_EQ(l->dst, nhwc_desc({1, 16, 20, 20}));
  EXPECT_EQ(activation_preferred_layout(engine, {1, 12, 20, 20}), nhwc_desc({1, 12, 20, 20}));
}

// A wide dense convolution (3x3, 32 channels or more each side, 32x32 pixels) keeps oneDNN's
// own blocked layout where its kernels are AVX2 ones, faster there than NHWC; NHWC on
// AVX-512. Under ctest this also runs with ONEDNN_MAX_CPU_ISA=AVX2. It runs as the graph
// either way, its result's layout feeding a residual.
TEST(OnednnLinear, WideDenseConvolutionsKeepTheBlockedLayoutOnAvx2) {
  const Graph g =
      make_graph({{"x", {1, 32, 32, 32}}, {"r", {1, 32, 32, 32}}}, {{"w", pattern({32, 32, 3, 3})}},
                 {{"Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<std::int64_t>{1, 1, 1, 1}}}},
                  {"Add", {"c", "r"}, {"y"}}},
                 {"y"});
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const std::optional<ConvLayouts> l = conv_preferred_layouts(engine, g, g.nodes[0]);
  ASSERT_TRUE(l);
  const dnnl::memory::dims dims{1, 32, 32, 32};
  const auto isa = dnnl::get_effective_cpu_isa();
  if (isa == dnnl::cpu_isa::avx2 || isa == dnnl::cpu_isa::avx2_vnni) {
    EXPECT_NE(l->src, nhwc_desc(dims));
    EXPECT_NE(l->src, plain_desc(dims));
    EXPECT_EQ(l->src.get_size(), plain_desc(dims).get_size());
  } else if (isa != dnnl::cpu_isa::sse41 && isa != dnnl::cpu_isa::avx) {
    EXPECT_EQ(l->src, nhwc_desc(dims));
  }
  LinearLayout layout;
  layout.preferred = *l;
  layout.operand_used_preferred = {true};
  dnnl::stream stream(engine);
  PackedWeights packing;
  LinearOp op = make_linear(engine, stream, g, g.nodes[0], {add("r")}, layout, packing);
  expect_runs_as_the_graph(op, stream, g, make_random_inputs(g, 9), {"r"}, "y");
}

// On AVX2 a strided dense 3x3 convolution keeps the blocked layout at any size (oneDNN's
// AVX2 kernels on NHWC ran stride-2 ones 2-2.5x slower on an AMD Zen 3), while a 1x1
// convolution of the same channels stays on NHWC. Both run as the graph. Under ctest
// this also runs with ONEDNN_MAX_CPU_ISA=AVX2.
TEST(OnednnLinear, StridedDenseConvolutionsKeepTheBlockedLayoutOnAvx2) {
  const Graph g = make_graph({{"x", {1, 32, 14, 14}}},
                             {{"w", pattern({48, 32, 3, 3})}, {"p", pattern({48, 48, 1, 1})}},
                             {{"Conv",
                               {"x", "w"},
                               {"c"},
                               {{"pads", std::vector<std::int64_t>{1, 1, 1, 1}},
                                {"strides", std::vector<std::int64_t>{2, 2}}}},
                              {"Conv", {"c", "p"}, {"y"}}},
                             {"c", "y"});
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const std::optional<ConvLayouts> strided = conv_preferred_layouts(engine, g, g.nodes[0]);
  const std::optional<ConvLayouts> pointwise = conv_preferred_layouts(engine, g, g.nodes[1]);
  ASSERT_TRUE(strided);
  ASSERT_TRUE(pointwise);
  const dnnl::memory::dims src{1, 32, 14, 14}, dst{1, 48, 7, 7};
  const auto isa = dnnl::get_effective_cpu_isa();
  if (isa == dnnl::cpu_isa::avx2 || isa == dnnl::cpu_isa::avx2_vnni) {
    EXPECT_NE(strided->src, nhwc_desc(src));
    EXPECT_NE(strided->dst, nhwc_desc(dst));
    EXPECT_NE(strided->dst, plain_desc(dst));
    EXPECT_EQ(strided->dst.get_size(), plain_desc(dst).get_size());
  } else if (isa != dnnl::cpu_isa::sse41 && isa != dnnl::cpu_isa::avx) {
    EXPECT_EQ(strided->src, nhwc_desc(src));
  }
  if (isa != dnnl::cpu_isa::sse41 && isa != dnnl::cpu_isa::avx) {
    EXPECT_EQ(pointwise->src, nhwc_desc(dst));
  }
  LinearLayout layout;
  layout.preferred = *strided;
  dnnl::stream stream(engine);
  PackedWeights packing;
  LinearOp op = make_linear(engine, stream, g, g.nodes[0], {}, layout, packing);
  expect_runs_as_the_graph(op, stream, g, make_random_inputs(g, 4), {}, "c");
}

// A blocked layout (where only it has a fast kernel) still runs: the convolution on nChw8c,
// its plain source and result reordered in and out, a residual read in the result's layout.
TEST(OnednnLinear, AConvolutionOnABlockedLayoutRunsAsTheGraph) {
  const Graph g =
      make_graph({{"x", {1, 16, 6, 6}}, {"r", {1, 8, 6, 6}}},
                 {{"w", pattern({8, 16, 3, 3})},
                  {"b", runtime_test::f32({1, 8, 1, 1}, std::vector<float>(8, -0.1f))}},
                 {{"Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<std::int64_t>{1, 1, 1, 1}}}},
                  {"Add", {"c", "b"}, {"cb"}},
                  {"Add", {"cb", "r"}, {"y"}}},
                 {"y"});
  using tag = dnnl::memory::format_tag;
  LinearLayout layout;
  layout.preferred =
      ConvLayouts{dnnl::memory::desc({1, 16, 6, 6}, dnnl::memory::data_type::f32, tag::nChw8c),
                  dnnl::memory::desc({1, 8, 6, 6}, dnnl::memory::data_type::f32, tag::nChw8c)};
  layout.operand_used_preferred = {false, true};  // the residual, read as the result is laid out
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  PackedWeights packing;
  LinearOp op = make_linear(engine, stream, g, g.nodes[0], {add("b"), add("r")}, layout, packing);
  EXPECT_TRUE(op.src_reorder);
  EXPECT_TRUE(op.dst_reorder);
  EXPECT_EQ(op.bias_values.size(), 8u);
  expect_runs_as_the_graph(op, stream, g, make_random_inputs(g, 8), {"b", "r"}, "y");
}

// gelu's tanh form as oneDNN's gelu_tanh post-op computes what its eight nodes do.
TEST(OnednnLinear, GeluTanhPostOpRunsAsTheGraph) {
  auto constants = runtime_test::gelu_tanh_constants();
  constants.emplace_back("w", pattern({16, 24}));
  std::vector<runtime_test::NodeSpec> nodes{{"MatMul", {"a", "w"}, {"m"}}};
  for (const auto& n : runtime_test::gelu_tanh_nodes("m", "y")) nodes.push_back(n);
  const Graph g = make_graph({{"a", {6, 16}}}, constants, nodes, {"y"});
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  PackedWeights packing;
  const PostOp gelu{PostOp::Kind::Eltwise, OnednnAlgorithm::EltwiseGeluTanh, 0, 0, ""};
  LinearOp op = make_linear(engine, stream, g, g.nodes[0], {gelu}, {}, packing);
  expect_runs_as_the_graph(op, stream, g, make_random_inputs(g, 4), {}, "y");
}

TEST(OnednnLinear, OnlyAFirstConstantAddPerColumnIsAMatMulsBias) {
  // A full-size first Add is no bias; the per-column constant after it is not first.
  const Graph g = make_graph(
      {{"a", {3, 5}}, {"r", {3, 4}}},
      {{"w", pattern({5, 4})}, {"b", runtime_test::f32({4}, {1, 2, 3, 4})}},
      {{"MatMul", {"a", "w"}, {"m"}}, {"Add", {"m", "r"}, {"s"}}, {"Add", {"s", "b"}, {"y"}}},
      {"y"});
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  PackedWeights packing;
  LinearOp late = make_linear(engine, stream, g, g.nodes[0], {add("r"), add("b")}, {}, packing);
  EXPECT_TRUE(late.bias_values.empty());
  EXPECT_EQ(late.binary.size(), 2u);
  expect_runs_as_the_graph(late, stream, g, make_random_inputs(g, 6), {"r", "b"}, "y");

  const Graph first = make_graph(
      {{"a", {3, 5}}}, {{"w", pattern({5, 4})}, {"b", runtime_test::f32({4}, {1, 2, 3, 4})}},
      {{"MatMul", {"a", "w"}, {"m"}}, {"Add", {"m", "b"}, {"y"}}}, {"y"});
  LinearOp bias = make_linear(engine, stream, first, first.nodes[0], {add("b")}, {}, packing);
  EXPECT_EQ(bias.bias_values, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_TRUE(bias.binary.empty());
  expect_runs_as_the_graph(bias, stream, first, make_random_inputs(first, 7), {"b"}, "y");
}

// oneDNN's gemm (the matmul below AVX-512, so under ctest's ONEDNN_MAX_CPU_ISA=AVX2 run)
// reads constant weights plain: their rows are padded to an odd multiple of 64 bytes (128
// floats -> 144; 80 already is one; 40 columns are too narrow to matter). Where oneDNN packs
// the weights itself (brgemm), they stay in its layout. Either way the product is the graph's.
TEST(OnednnLinear, PlainGemmWeightsGetRowsPaddedOffTheCacheSetStride) {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  for (const auto& [n, stride] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{128, 144}, {80, 80}, {40, 40}}) {
    const Graph g = make_graph({{"a", {6, 32}}}, {{"w", pattern({32, n})}, {"b", pattern({n})}},
                               {{"MatMul", {"a", "w"}, {"m"}}, {"Add", {"m", "b"}, {"y"}}}, {"y"});
    PackedWeights packing;
    LinearOp op = make_linear(engine, stream, g, g.nodes[0], {add("b")}, {}, packing);
    const auto& blocking = op.wei.get_desc().data.format_desc.blocking;
    const bool plain =
        op.wei.get_desc().data.format_kind == dnnl_blocked && blocking.inner_nblks == 0;
    if (op.implementation.find("gemm") != std::string::npos &&
        op.implementation.find("brg") == std::string::npos) {
      ASSERT_TRUE(plain) << op.implementation;
      EXPECT_EQ(blocking.strides[0], stride) << "N = " << n;
      EXPECT_EQ(blocking.strides[1], 1);
      EXPECT_EQ(op.packed_weights, stride != n);
    }
    expect_runs_as_the_graph(op, stream, g, make_random_inputs(g, 5), {"b"}, "y");
  }
}

}  // namespace
}  // namespace orchid
