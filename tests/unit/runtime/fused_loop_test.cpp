// Fused loops against the reference interpreter on small hand-made runs: row programs
// (softmax, layer norm with broadcast weights), data movement on inputs (transposed
// loads) and on results (transposed stores), plus the runs a loop must refuse. Outputs
// must match within |a - b| <= 1e-5 + 1e-5 * |b| (float math vs the reference's double).
// Also checks that executing a plan allocates nothing in steady state.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <new>

#include "cost/cost_model.hpp"
#include "eval/random_inputs.hpp"
#include "eval/reference_interpreter.hpp"
#include "ir/op_registry.hpp"
#include "orchestrate/orchestrator.hpp"
#include "passes/load_model.hpp"
#include "runtime/fused/fused_loop.hpp"
#include "runtime/onednn_memory.hpp"
#include "runtime/plan_executor.hpp"
#include "small_graph.hpp"
#include "test_config_roots.hpp"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
}  // namespace

// Counts heap allocations while g_counting is set (the whole test binary uses these).
void* operator new(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) ++g_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// GCC cannot see that the replaced operator new above is malloc-based.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
// The nothrow forms too (std::stable_sort's buffer): under AddressSanitizer, whose own
// nothrow new would otherwise allocate what the free() above releases.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (g_counting.load(std::memory_order_relaxed)) ++g_allocations;
  return std::malloc(n ? n : 1);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop

namespace orchid {
namespace {

using runtime_test::f32;
using runtime_test::i64;
using runtime_test::make_graph;
using runtime_test::NodeSpec;

// Compiles every node of `g` as one loop (asserting it compiles), runs it and compares
// each graph output with the reference interpreter.
void expect_loop_matches(const Graph& g, std::int64_t want_cols) {
  std::vector<std::size_t> nodes;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) nodes.push_back(i);
  const std::set<std::string> needed(g.outputs.begin(), g.outputs.end());
  auto compiled = FusedLoop::compile(g, nodes, needed);
  ASSERT_TRUE(compiled) << compiled.why();
  const std::unique_ptr<FusedLoop>& loop = *compiled;
  EXPECT_EQ(loop->cols(), want_cols);
  const TensorMap feed = make_random_inputs(g, 7);
  const TensorMap want = ReferenceInterpreter(g).run(feed);
  std::vector<const std::byte*> reads;
  for (const auto& t : loop->reads()) {
    reads.push_back(g.is_constant(t) ? g.tensor(t).data->raw() : feed.at(t).raw());
  }
  TensorMap got;
  std::vector<std::byte*> writes;
  for (const auto& t : loop->writes()) {
    got[t] = Tensor(DType::F32, g.tensor(t).shape);
    writes.push_back(got[t].raw());
  }
  for (int round = 0; round < 2; ++round) loop->run(reads, writes);
  for (const auto& out : g.outputs) {
    const Tensor& a = got.at(out);
    const Tensor& b = want.at(out);
    ASSERT_EQ(a.shape(), b.shape());
    for (std::int64_t i = 0; i < b.numel(); ++i) {
      const double x = a.get_as_double(i), y = b.get_as_double(i);
      ASSERT_LE(std::fabs(x - y), 1e-5 + 1e-5 * std::fabs(y)) << out << "[" << i << "]";
    }
  }
}

Graph softmax_graph() {
  return make_graph({{"x", {2, 3, 40}}}, {{"ax", i64({1}, {-1})}},
                    {{"ReduceMax", {"x"}, {"m"}, {{"axes", std::vector<std::int64_t>{-1}}}},
                     {"Sub", {"x", "m"}, {"d"}},
                     {"Exp", {"d"}, {"e"}},
                     {"ReduceSum", {"e", "ax"}, {"s"}},
                     {"Div", {"e", "s"}, {"y"}}},
                    {"y"});
}

// Runs every node of `g` as one loop that reads and writes the tensors in `layouts` as
// stored there (offsets from oneDNN descriptors), and compares with the reference.
void expect_stored_loop_matches(const Graph& g,
                                const std::map<std::string, dnnl::memory::desc>& descs,
                                std::int64_t want_cols, std::int64_t max_scratch_bytes = -1) {
  std::vector<std::size_t> nodes;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) nodes.push_back(i);
  const std::set<std::string> needed(g.outputs.begin(), g.outputs.end());
  StoredLayouts layouts;
  for (const auto& [t, d] : descs)
    layouts[t] = std::make_shared<const StoredLayout>(stored_layout(d));
  auto compiled = FusedLoop::compile(g, nodes, needed, layouts);
  ASSERT_TRUE(compiled) << compiled.why();
  const std::unique_ptr<FusedLoop>& loop = *compiled;
  // Without reductions a row is a run of at least 1024 elements of the tensor it walks in
  // storage order (whole cache lines of the plain tensors it converts: N, C/8, H, W, 8
  // blocked: 8 x 10 x 8 x 2; N, H, W, C: 16 x 10 x 8), else of the logical shape.
  EXPECT_EQ(loop->cols(), want_cols);
  if (max_scratch_bytes >= 0) {
    EXPECT_LE(loop->scratch_bytes(), max_scratch_bytes);
  }
  const TensorMap feed = make_random_inputs(g, 3);
  const TensorMap want = ReferenceInterpreter(g).run(feed);
  auto stored_copy = [&](const std::string& t, const Tensor& logical) {
    Tensor s(DType::F32, logical.shape());
    auto it = layouts.find(t);
    for (std::int64_t i = 0; i < logical.numel(); ++i) {
      const std::int64_t o =
          it == layouts.end() ? i : it->second->offsets[static_cast<std::size_t>(i)];
      s.data<float>()[o] = logical.data<float>()[i];
    }
    return s;
  };
  std::map<std::string, Tensor> inputs;
  std::vector<const std::byte*> reads;
  for (const auto& t : loop->reads()) {
    if (g.is_constant(t)) {
      reads.push_back(g.tensor(t).data->raw());
    } else {
      inputs[t] = stored_copy(t, feed.at(t));
      reads.push_back(inputs[t].raw());
    }
  }
  TensorMap got;
  std::vector<std::byte*> writes;
  for (const auto& t : loop->writes()) {
    got[t] = Tensor(DType::F32, g.tensor(t).shape);
    writes.push_back(got[t].raw());
  }
  loop->run(reads, writes);
  for (const auto& out : g.outputs) {
    const Tensor& b = want.at(out);
    auto it = layouts.find(out);
    for (std::int64_t i = 0; i < b.numel(); ++i) {
      const std::int64_t o =
          it == layouts.end() ? i : it->second->offsets[static_cast<std::size_t>(i)];
      const double x = got.at(out).data<float>()[o], y = b.get_as_double(i);
      ASSERT_LE(std::fabs(x - y), 1e-5 + 1e-5 * std::fabs(y)) << out << "[" << i << "]";
    }
  }
}

TEST(FusedLoop, ReadsAndWritesBlockedAndChannelsLastTensorsInPlace) {
  const dnnl::memory::dims dims{2, 16, 8, 10};
  const auto nhwc =
      dnnl::memory::desc(dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nhwc);
  const auto blocked =
      dnnl::memory::desc(dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nChw8c);
  const Graph g = make_graph(
      {{"x", {2, 16, 8, 10}}, {"r", {2, 16, 8, 10}}}, {{"b", runtime_test::pattern({1, 16, 1, 1})}},
      {{"Add", {"x", "b"}, {"xb"}},
       {"Add", {"xb", "r"}, {"s"}},
       {"Relu", {"s"}, {"y"}},
       {"Transpose", {"s"}, {"t"}, {{"perm", std::vector<std::int64_t>{0, 2, 3, 1}}}}},
      {"y", "t"});
  // Result blocked, one source channels-last, the other plain; and every mix of them.
  expect_stored_loop_matches(g, {{"y", blocked}, {"x", nhwc}}, 1280);
  expect_stored_loop_matches(g, {{"x", blocked}, {"r", blocked}}, 1280);
  expect_stored_loop_matches(g, {{"y", nhwc}, {"r", blocked}}, 1280);
}

// A squeeze-and-excitation scale: a per-channel value broadcast over the pixels of an NHWC
// tensor. In storage order its columns repeat every 24 (the row is filled from the first
// 24, not gathered column by column).
TEST(FusedLoop, APerChannelScaleOverChannelsLastPixels) {
  const dnnl::memory::dims dims{1, 24, 8, 8};
  const auto nhwc =
      dnnl::memory::desc(dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nhwc);
  const Graph g = make_graph({{"x", {1, 24, 8, 8}}, {"s", {1, 24, 1, 1}}}, {},
                             {{"Mul", {"x", "s"}, {"y"}}}, {"y"});
  expect_stored_loop_matches(g, {{"x", nhwc}, {"y", nhwc}}, 1536);
}

// A reflecting Pad between channels-last tensors maps neighbouring pixels backwards at the
// image's edges. An image row of 160 x 32 elements is longer than a row of the loop, and
// rows of 1024 or 64 elements (parts of image rows) are not separable: they need a table
// of one offset per element. Rows of one pixel's 32 channels need one per pixel.
TEST(FusedLoop, AReflectingPadOverChannelsLastPixelsNeedsNoElementTable) {
  const dnnl::memory::dims in{1, 32, 8, 156}, out{1, 32, 12, 160};
  const auto nhwc = [](const dnnl::memory::dims& d) {
    return dnnl::memory::desc(d, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nhwc);
  };
  const Graph g =
      make_graph({{"x", {in.begin(), in.end()}}}, {{"p", i64({8}, {0, 0, 2, 2, 0, 0, 2, 2})}},
                 {{"Pad", {"x", "p"}, {"y"}, {{"mode", std::string("reflect")}}}}, {"y"});
  const std::int64_t elements = 32 * 12 * 160;
  expect_stored_loop_matches(g, {{"x", nhwc(in)}, {"y", nhwc(out)}}, 32, elements);
}

TEST(FusedLoop, ReductionsOverStoredTensorsWalkInLogicalOrder) {
  const dnnl::memory::dims dims{1, 16, 5, 7};
  const auto blocked =
      dnnl::memory::desc(dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nChw8c);
  const Graph g =
      make_graph({{"x", {1, 16, 5, 7}}}, {},
                 {{"Relu", {"x"}, {"r"}},
                  {"ReduceMean", {"r"}, {"y"}, {{"axes", std::vector<std::int64_t>{2, 3}}}}},
                 {"y"});
  expect_stored_loop_matches(g, {{"x", blocked}}, 35);
}

TEST(FusedLoop, Softmax) {
  expect_loop_matches(softmax_graph(), 40);
}

// GPT-2's GELU, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), on inputs scaled to
// [-4, 4]: the vectorised tanh (both of its ranges) and the cube as products.
TEST(FusedLoop, GeluWithTanhAndACube) {
  auto constants = runtime_test::gelu_tanh_constants();
  constants.emplace_back("four", f32({}, {4.0f}));
  std::vector<NodeSpec> nodes{{"Mul", {"u", "four"}, {"x"}}};
  for (const auto& n : runtime_test::gelu_tanh_nodes("x", "y")) nodes.push_back(n);
  const Graph g = make_graph({{"u", {3, 700}}}, constants, nodes, {"y"});
  expect_loop_matches(g, 700);
}

// Results are computed straight into their outputs, except where an output overlaps an
// input: here `a` is written over `w`, which a later instruction of the same row reads.
// Written early, row r of `a` would replace row r of `w` before `b` reads it.
TEST(FusedLoop, AResultWrittenOverAnInputItReadsLaterWaitsForTheRow) {
  const Graph g = make_graph({{"x", {64, 96}}, {"w", {64, 96}}}, {},
                             {{"Relu", {"x"}, {"a"}}, {"Add", {"a", "w"}, {"b"}}}, {"a", "b"});
  auto compiled = FusedLoop::compile(g, {0, 1}, {"a", "b"});
  ASSERT_TRUE(compiled) << compiled.why();
  FusedLoop& loop = **compiled;
  const TensorMap feed = make_random_inputs(g, 3);
  const TensorMap want = ReferenceInterpreter(g).run(feed);
  for (const bool shared : {false, true}) {
    Tensor x = feed.at("x"), w = feed.at("w"), a(DType::F32, {64, 96}), b(DType::F32, {64, 96});
    std::map<std::string, std::byte*> at{
        {"x", x.raw()}, {"w", w.raw()}, {"a", shared ? w.raw() : a.raw()}, {"b", b.raw()}};
    std::vector<const std::byte*> reads;
    for (const auto& t : loop.reads()) reads.push_back(at.at(t));
    std::vector<std::byte*> writes;
    for (const auto& t : loop.writes()) writes.push_back(at.at(t));
    loop.run(reads, writes);
    const Tensor& got_a = shared ? w : a;
    for (std::int64_t i = 0; i < b.numel(); ++i) {
      ASSERT_EQ(got_a.get_as_double(i), want.at("a").get_as_double(i)) << shared << " a " << i;
      ASSERT_NEAR(b.get_as_double(i), want.at("b").get_as_double(i), 1e-6) << shared << " b " << i;
    }
  }
}

TEST(FusedLoop, LayerNormWithBroadcastWeightsAndRowOutput) {
  std::vector<float> gamma(16), beta(16);
  for (int i = 0; i < 16; ++i) {
    gamma[i] = 0.5f + 0.1f * static_cast<float>(i);
    beta[i] = -0.2f * static_cast<float>(i);
  }
  const Graph g = make_graph(
      {{"x", {5, 16}}},
      {{"eps", f32({}, {1e-5f})}, {"gamma", f32({16}, gamma)}, {"beta", f32({16}, beta)}},
      {{"ReduceMean", {"x"}, {"mu"}, {{"axes", std::vector<std::int64_t>{1}}}},
       {"Sub", {"x", "mu"}, {"d"}},
       {"Mul", {"d", "d"}, {"d2"}},
       {"ReduceMean", {"d2"}, {"var"}, {{"axes", std::vector<std::int64_t>{1}}}},
       {"Add", {"var", "eps"}, {"ve"}},
       {"Sqrt", {"ve"}, {"std"}},
       {"Div", {"d", "std"}, {"n"}},
       {"Mul", {"n", "gamma"}, {"g"}},
       {"Add", {"g", "beta"}, {"y"}}},
      {"y", "std"});
  expect_loop_matches(g, 16);
}

TEST(FusedLoop, TransposedInputIsAnIndexMappedLoad) {
  // Layer norm over the channels of an NCHW tensor read through a Transpose.
  const Graph g =
      make_graph({{"x", {1, 8, 3, 5}}}, {},
                 {{"Transpose", {"x"}, {"t"}, {{"perm", std::vector<std::int64_t>{0, 2, 3, 1}}}},
                  {"ReduceMean", {"t"}, {"mu"}, {{"axes", std::vector<std::int64_t>{-1}}}},
                  {"Sub", {"t", "mu"}, {"y"}}},
                 {"y"});
  expect_loop_matches(g, 8);
}

TEST(FusedLoop, TransposedResultIsAScatteredStore) {
  // Bias add, then the attention head split: Reshape (free) + Transpose (scatter).
  std::vector<float> bias(24);
  for (int i = 0; i < 24; ++i) bias[i] = static_cast<float>(i);
  const Graph g =
      make_graph({{"x", {1, 6, 24}}}, {{"b", f32({24}, bias)}, {"shape", i64({4}, {1, 6, 4, 6})}},
                 {{"Add", {"x", "b"}, {"a"}},
                  {"Reshape", {"a", "shape"}, {"r"}},
                  {"Transpose", {"r"}, {"y"}, {{"perm", std::vector<std::int64_t>{0, 2, 1, 3}}}}},
                 {"y"});
  expect_loop_matches(g, 24 * 6);
}

TEST(FusedLoop, PureDataMovementIsAGather) {
  const Graph g =
      make_graph({{"x", {2, 3, 70}}},
                 {{"starts", i64({1}, {1})}, {"ends", i64({1}, {3})}, {"axes", i64({1}, {1})}},
                 {{"Transpose", {"x"}, {"t"}, {{"perm", std::vector<std::int64_t>{1, 0, 2}}}},
                  {"Slice", {"t", "starts", "ends", "axes"}, {"y"}}},
                 {"y"});
  expect_loop_matches(g, 70);
}

// YOLO's Focus: four strided Slices of one image side by side along the channels. The
// Concat of parts of one tensor is a gather of it, with no intermediate.
Graph focus_graph() {
  auto slice = [](const char* starts, const char* out) {
    return runtime_test::NodeSpec{"Slice", {"x", starts, "ends", "axes", "steps"}, {out}};
  };
  return make_graph({{"x", {1, 3, 8, 6}}},
                    {{"s00", i64({2}, {0, 0})},
                     {"s10", i64({2}, {1, 0})},
                     {"s01", i64({2}, {0, 1})},
                     {"s11", i64({2}, {1, 1})},
                     {"ends", i64({2}, {8, 6})},
                     {"axes", i64({2}, {2, 3})},
                     {"steps", i64({2}, {2, 2})}},
                    {slice("s00", "a"),
                     slice("s10", "b"),
                     slice("s01", "c"),
                     slice("s11", "d"),
                     {"Concat", {"a", "b", "c", "d"}, {"y"}, {{"axis", std::int64_t{1}}}}},
                    {"y"});
}

TEST(FusedLoop, AConcatOfPartsOfOneTensorIsAGather) {
  expect_loop_matches(focus_graph(), 144);
  // Parts of two tensors are refused by name (oneDNN concatenates them).
  const Graph two = make_graph({{"x", {1, 2, 4}}, {"z", {1, 2, 4}}}, {},
                               {{"Concat", {"x", "z"}, {"y"}, {{"axis", std::int64_t{1}}}}}, {"y"});
  auto refused = FusedLoop::compile(two, {0}, {"y"});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.why().find("parts of 'x' and 'z'"), std::string::npos) << refused.why();
}

TEST(FusedLoop, RefusesWhatItCannotExpress) {
  std::string why;
  // A reduction over a leading axis is not a row program.
  const Graph lead =
      make_graph({{"x", {4, 6}}}, {},
                 {{"ReduceMean", {"x"}, {"m"}, {{"axes", std::vector<std::int64_t>{0}}}},
                  {"Sub", {"x", "m"}, {"y"}}},
                 {"y"});
  auto refused = FusedLoop::compile(lead, {0, 1}, {"y"});
  EXPECT_FALSE(refused);
  if (!refused) why = refused.why();
  EXPECT_NE(why.find("not trailing"), std::string::npos) << why;
  // Reductions over rows of different lengths cannot share one domain.
  const Graph two =
      make_graph({{"x", {4, 6}}}, {},
                 {{"ReduceMean", {"x"}, {"m"}, {{"axes", std::vector<std::int64_t>{1}}}},
                  {"ReduceMean", {"x"}, {"all"}, {{"axes", std::vector<std::int64_t>{0, 1}}}}},
                 {"m", "all"});
  EXPECT_FALSE(FusedLoop::compile(two, {0, 1}, {"m", "all"}));
  // Ops with no fused form (pooling) are refused with their name.
  Graph pool = make_graph(
      {{"x", {1, 2, 4, 4}}}, {},
      {{"MaxPool", {"x"}, {"y"}, {{"kernel_shape", std::vector<std::int64_t>{2, 2}}}}}, {"y"});
  auto pooled = FusedLoop::compile(pool, {0}, {"y"});
  EXPECT_FALSE(pooled);
  if (!pooled) why = pooled.why();
  EXPECT_NE(why.find("MaxPool"), std::string::npos) << why;
  // A few rows gathered from a large table: index tables of the table's size (BERT's
  // embeddings: hundreds of MB) are not built; the Gather runs as its own kernel.
  const Graph table = make_graph(
      {{"x", {1, 4, 300}}},
      {{"emb", runtime_test::pattern({4096, 300})}, {"ids", i64({1, 4}, {0, 7, 4095, 3})}},
      {{"Gather", {"emb", "ids"}, {"e"}}, {"Add", {"e", "x"}, {"y"}}}, {"y"});
  auto gathered = FusedLoop::compile(table, {0, 1}, {"y"});
  EXPECT_FALSE(gathered);
  if (!gathered) why = gathered.why();
  EXPECT_NE(why.find("1228800"), std::string::npos) << why;
  // Offsets are 32-bit: a tensor of 2^31 elements is refused by name before any table of
  // its size is built (only its shape exists here).
  const Graph huge =
      make_graph({{"x", {2, std::int64_t{1} << 30}}}, {}, {{"Relu", {"x"}, {"y"}}}, {"y"});
  auto wide = FusedLoop::compile(huge, {0}, {"y"});
  EXPECT_FALSE(wide);
  if (!wide) why = wide.why();
  EXPECT_NE(why.find("'x' has 2^31 elements or more"), std::string::npos) << why;
}

TEST(PlanExecutorSteadyState, ExecuteAllocatesNothingOutsideOneDnn) {
  // A model without linear ops, all of whose kernels are fused loops. (oneDNN builds a
  // small argument map inside every primitive execution, and the reference kernels that
  // remain for pooling / Pad / Resize / Concat keep small index vectors, so plans with
  // those allocate there, as does a lone Transpose, oneDNN's reorder; the executor and
  // its fused loops do not.)
  std::vector<float> gamma(40, 1.5f);
  const Graph g = make_graph(
      {{"x", {2, 3, 40}}},
      {{"ax", i64({1}, {-1})}, {"gamma", f32({40}, gamma)}, {"pads", i64({6}, {0, 0, 1, 0, 0, 1})}},
      {{"ReduceMax", {"x"}, {"m"}, {{"axes", std::vector<std::int64_t>{-1}}}},
       {"Sub", {"x", "m"}, {"d"}},
       {"Exp", {"d"}, {"e"}},
       {"ReduceSum", {"e", "ax"}, {"s"}},
       {"Div", {"e", "s"}, {"p"}},
       {"Mul", {"p", "gamma"}, {"q"}},
       // A data move (a lone Transpose would be oneDNN's reorder, not a loop).
       {"Pad", {"q", "pads"}, {"y"}, {{"mode", std::string("edge")}}}},
      {"y"});
  const auto cost_model = make_analytic_cost_model(load_device_spec("cpu", test::source_configs()));
  const Orchestration o = orchestrate(g, *cost_model);
  const TensorMap feed = make_random_inputs(g, 0);
  const TensorMap want = ReferenceInterpreter(g).run(feed);
  for (const Plan* plan : {&o.optimal, &o.greedy, &o.operator_level, &o.per_primitive}) {
    PlanExecutor executor(o.fission.graph, *plan, o.fission.alternatives);
    executor.execute(feed);
    g_allocations = 0;
    g_counting = true;
    for (int i = 0; i < 3; ++i) executor.execute(feed);
    g_counting = false;
    EXPECT_EQ(g_allocations.load(), 0) << plan->kind;
    EXPECT_GT(executor.stats().fused_loops, 0u) << plan->kind;
    const TensorMap got = executor.outputs();
    const Tensor& a = got.at("y");
    const Tensor& b = want.at("y");
    for (std::int64_t i = 0; i < b.numel(); ++i) {
      ASSERT_NEAR(a.get_as_double(i), b.get_as_double(i),
                  1e-5 + 1e-5 * std::fabs(b.get_as_double(i)));
    }
  }
}

}  // namespace
}  // namespace orchid
