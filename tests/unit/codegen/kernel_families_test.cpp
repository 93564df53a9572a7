// Each generated kernel family on edge shapes, through OpenCL on the first OpenCL
// device (PoCL here): sizes not divisible by the block or the GEMM tiles, size-1 axes,
// broadcasting, a tensor larger than one launch covers (grid-stride loops), reductions
// over non-trailing and non-contiguous axes, every pad mode and resize mode, gathers
// with negative indices, batched / broadcast / vector MatMul, grouped, depthwise,
// dilated and 1-D convolutions, ConvTranspose. Each graph runs as one fused plan kernel
// and as one plan kernel per node, and must match the reference interpreter within
// 1e-4 + 1e-3 |ref|.
#include <gtest/gtest.h>

#include "codegen/cuda_backend.hpp"
#include "codegen/opencl_executor.hpp"
#include "codegen/plan_codegen.hpp"
#include "codegen_test_util.hpp"
#include "eval/random_inputs.hpp"

namespace orchid::codegen {
namespace {

using test::GraphBuilder;
using test::plan_of;

void check_opencl(const Graph& g, const TensorMap& feed, const TensorMap& expected,
                  int fused_launches);

// `g` against the reference interpreter: through OpenCL where a device is present
// (check_opencl), and as CUDA on the GPU where one is (the GPU check script).
void check(const Graph& g, int fused_launches = -1) {
  std::string why;
  const bool opencl = OpenCLExecutor::available(&why);
  const bool gpu = test::cuda_gpu_present();
  if (!opencl && !gpu) GTEST_SKIP() << why;
  const TensorMap feed = make_random_inputs(g, 1);
  const TensorMap expected = ReferenceInterpreter(g).run(feed);
  if (opencl) check_opencl(g, feed, expected, fused_launches);
  // On a GPU machine: the CUDA target of the same graph, fused and per node, on the GPU.
  if (!gpu) return;
  for (const auto& [name, groups] : {std::pair{"cuda fused", test::fused_groups(g)},
                                     std::pair{"cuda per-node", test::per_node_groups(g)}}) {
    const DeviceProgram program =  // the executor keeps a reference
        generate_device_program(g, plan_of(g, groups), {}, Target::Cuda, {});
    CudaExecutor executor(program);
    executor.execute(feed);
    test::expect_close(executor.outputs(), expected, name);
  }
}

// `fused_launches`: how many device kernels the one-kernel plan must take (-1: any).
// Runs the graph fused and per node (float4 where allowed), fused with vectorisation
// off (the scalar variant of every stage), and per node with misaligned arena tensors
// (vector loops whose loads/stores of those tensors fall back to scalars). The last two
// only where some launch is vectorised: otherwise they would repeat the first two.
void check_opencl(const Graph& g, const TensorMap& feed, const TensorMap& expected,
                  int fused_launches) {
  const auto fused = test::fused_groups(g);
  const auto each = test::per_node_groups(g);
  struct Variant {
    std::string name;
    std::vector<std::vector<std::size_t>> groups;
    bool vectorize;
    std::int64_t shift;
  };
  bool vectorised = false;
  for (const Variant& v :
       {Variant{"fused", fused, true, 0}, Variant{"per-node", each, true, 0},
        Variant{"fused scalar", fused, false, 0}, Variant{"per-node misaligned", each, true, 4}}) {
    if ((!v.vectorize || v.shift != 0) && !vectorised) continue;
    CodegenOptions options;
    options.vectorize = v.vectorize;
    const DeviceProgram program =
        generate_device_program(g, plan_of(g, v.groups, v.shift), {}, Target::OpenCL, options);
    for (const auto& l : program.launches) vectorised = vectorised || l.vector_width > 1;
    if (v.name == "fused" && fused_launches >= 0) {
      EXPECT_EQ(program.launches.size(), static_cast<std::size_t>(fused_launches))
          << program.source;
    }
    // The kernels after the prelude (which defines the macros).
    const std::string kernels = program.source.substr(prelude(Target::OpenCL).size());
    if (!v.vectorize) {
      EXPECT_EQ(kernels.find("LOAD_F4("), std::string::npos);
      for (const auto& l : program.launches) EXPECT_EQ(l.vector_width, 1) << l.ops;
    }
    if (v.shift != 0) {
      EXPECT_EQ(kernels.find("STORE_F4("), std::string::npos) << kernels;
    }
    OpenCLExecutor executor(program);
    test::expect_close(executor.run(feed), expected, v.name);
  }
}

// Vector width of each launch of the one-kernel plan, by the ops it stores.
std::map<std::string, int> vector_widths(const Graph& g) {
  std::map<std::string, int> out;
  const Plan plan = plan_of(g, test::fused_groups(g));
  for (const auto& l : generate_device_program(g, plan, {}, Target::OpenCL).launches) {
    out[l.ops] = l.vector_width;
  }
  return out;
}

std::map<std::string, Attribute> axes(std::vector<std::int64_t> a, std::int64_t keepdims = 1) {
  return {{"axes", std::move(a)}, {"keepdims", keepdims}};
}

TEST(CodegenElementwise, BroadcastChainOddSizes) {
  GraphBuilder b;
  const auto x = b.input("x", {3, 1, 5});
  const auto y = b.input("y", {1, 7, 5});
  const auto s = b.node("Add", {x, y});
  const auto m = b.node("Mul", {s, b.constant("k", Tensor::scalar_f32(0.7f))});
  const auto z = b.node("Sigmoid", {m});
  const auto w =
      b.node("Where", {b.node("Greater", {z, b.constant("h", Tensor::scalar_f32(0.5f))}), z, m});
  check(b.finish({w, s}), 1);
}

TEST(CodegenElementwise, LargerThanOneLaunch) {
  GraphBuilder b;  // 18.1M elements: more than 65536 blocks x 256 threads
  const auto x = b.input("x", {17, 1031, 1033});
  check(b.finish({b.node("Relu", {b.node("Neg", {x})})}));
}

TEST(CodegenVector, MapStagesUseFloat4WhereTheInnermostAxisAllows) {
  GraphBuilder b;
  const auto x = b.input("x", {3, 5, 8});
  const auto row = b.input("row", {3, 5, 1});  // broadcast along the vector axis
  const auto y =
      b.node("Relu", {b.node("Add", {b.node("Mul", {x, row}), b.random_constant("bias", {8})})});
  const auto z = b.node("Sigmoid", {b.input("q", {1, 4})});  // a single vector
  const auto u = b.node("Neg", {b.input("o", {5, 6})});      // 6: not a multiple of 4
  const auto t = b.node("Transpose", {b.input("p", {2, 4, 8})},
                        {{"perm", std::vector<std::int64_t>{0, 2, 1}}});  // the lane axis moves
  const auto e = b.input("e", {2, 12});
  const auto k = b.node("Where", {b.node("Greater", {e, b.constant("h", Tensor::scalar_f32(0))}), e,
                                  b.constant("f", Tensor::scalar_f32(-2))});  // a bool inline
  const Graph g = b.finish({y, z, u, t, k});
  const auto widths = vector_widths(g);
  EXPECT_EQ(widths.at("Relu"), 4);
  EXPECT_EQ(widths.at("Sigmoid"), 4);
  EXPECT_EQ(widths.at("Neg"), 1);
  EXPECT_EQ(widths.at("Transpose"), 4);  // float4 stores, scalar loads (the lane axis moved)
  EXPECT_EQ(widths.at("Where"), 4);
  check(g);
}

TEST(CodegenVector, LayoutOpsKeepLanesWhereTheInnermostCoordinatePassesThrough) {
  GraphBuilder b;
  const auto x = b.input("x", {2, 3, 4, 8});
  // Heads split and merged as in attention: transposes of outer axes keep the lanes.
  const auto t = b.node("Transpose", {x}, {{"perm", std::vector<std::int64_t>{0, 2, 1, 3}}});
  const auto y = b.node("Relu", {b.node("Add", {t, b.random_constant("bias", {8})})});
  // The innermost axis moves: lanes read scalars.
  const auto m = b.node("Transpose", {x}, {{"perm", std::vector<std::int64_t>{0, 1, 3, 2}}});
  const auto mz = b.node("Neg", {m});
  // A reshape that only adds a size-1 axis, one that regroups, slices of outer and inner axes.
  const auto u =
      b.node("Sigmoid", {b.node("Unsqueeze", {x, b.constant("ax", Tensor::from_int64s({2}))})});
  const auto r =
      b.node("Exp", {b.node("Reshape", {x, b.constant("sh", Tensor::from_int64s({12, 16}))})});
  const auto s1 = b.node("Slice", {x, b.constant("st", Tensor::from_int64s({1})),
                                   b.constant("en", Tensor::from_int64s({3})),
                                   b.constant("sa", Tensor::from_int64s({1}))});
  const auto s2 = b.node("Slice", {x, b.constant("st2", Tensor::from_int64s({2})),
                                   b.constant("en2", Tensor::from_int64s({6})),
                                   b.constant("sa2", Tensor::from_int64s({3}))});
  const Graph g = b.finish({y, mz, u, r, b.node("Abs", {s1}), b.node("Abs", {s2})});
  const auto widths = vector_widths(g);
  EXPECT_EQ(widths.at("Relu"), 4);
  EXPECT_EQ(widths.at("Sigmoid"), 4);
  EXPECT_EQ(widths.at("Exp"), 4);
  check(g);
}

TEST(CodegenVector, RowStagesUseFloat4WhenTheInnermostAxisIsReduced) {
  GraphBuilder b;
  const auto x = b.input("x", {6, 512});  // LayerNorm over a multiple of 4
  const auto mean = b.node("ReduceMean", {x}, axes({1}));
  const auto d = b.node("Sub", {x, mean});
  const auto var = b.node("ReduceMean", {b.node("Mul", {d, d})}, axes({1}));
  const auto ln =
      b.node("Mul", {b.node("Div", {d, b.node("Sqrt", {var})}), b.random_constant("gamma", {512})});
  const auto z = b.input("z", {4, 3, 8});
  const auto outer = b.node("ReduceSum", {b.node("Exp", {z})}, axes({0, 2}));  // innermost too
  const auto w = b.input("w", {4, 8, 3});
  const auto kept = b.node("ReduceMax", {w}, axes({1}));  // innermost kept: scalar
  const auto v = b.input("v", {7, 4});
  const auto narrow = b.node("ReduceMin", {v}, axes({1}, 0));  // a row of one vector
  const Graph g = b.finish({ln, outer, kept, narrow});
  const auto widths = vector_widths(g);
  EXPECT_EQ(widths.at("ReduceMean+ReduceMean"), 4);
  EXPECT_EQ(widths.at("ReduceSum"), 4);
  EXPECT_EQ(widths.at("ReduceMax"), 1);
  EXPECT_EQ(widths.at("ReduceMin"), 4);
  check(g);
}

TEST(CodegenReduction, SoftmaxLongRowAndSizeOneAxis) {
  GraphBuilder b;
  const auto x = b.input("x", {5, 1, 300});
  const auto mx = b.node("ReduceMax", {x}, axes({-1}));
  const auto e = b.node("Exp", {b.node("Sub", {x, mx})});
  const auto s = b.node("ReduceSum", {e, b.constant("ax", Tensor::from_int64s({2}))},
                        {{"keepdims", std::int64_t{1}}});
  check(b.finish({b.node("Div", {e, s})}), 1);  // max, sum and division in one block per row
}

TEST(CodegenReduction, LayerNormAndNonTrailingAxes) {
  GraphBuilder b;
  const auto x = b.input("x", {6, 513});
  const auto mean = b.node("ReduceMean", {x}, axes({1}));
  const auto d = b.node("Sub", {x, mean});
  const auto var = b.node("ReduceMean", {b.node("Mul", {d, d})}, axes({1}));
  const auto den =
      b.node("Sqrt", {b.node("Add", {var, b.constant("eps", Tensor::scalar_f32(1e-5f))})});
  const auto y =
      b.node("Add", {b.node("Mul", {b.node("Div", {d, den}), b.random_constant("gamma", {513})}),
                     b.random_constant("beta", {513})});
  const auto z = b.input("z", {4, 3, 7, 2});
  const auto over1 = b.node("ReduceMax", {z}, axes({1}));          // non-trailing axis
  const auto over02 = b.node("ReduceMean", {z}, axes({0, 2}, 0));  // non-contiguous, keepdims 0
  const auto prod = b.node("ReduceProd", {z}, axes({3}));
  check(b.finish({y, mean, over1, over02, prod}));
}

TEST(CodegenSelection, ArgMaxArgMinWithTies) {
  GraphBuilder b;
  const auto x = b.input("x", {5, 7, 3});
  const auto am = b.node("ArgMax", {x}, {{"axis", std::int64_t{1}}, {"keepdims", std::int64_t{0}}});
  // Coarse values: many ties, first and last index.
  const auto coarse =
      b.node("Floor", {b.node("Mul", {x, b.constant("two", Tensor::scalar_f32(2))})});
  const auto first = b.node("ArgMax", {coarse}, {{"axis", std::int64_t{2}}});
  const auto last = b.node("ArgMin", {coarse},
                           {{"axis", std::int64_t{-1}}, {"select_last_index", std::int64_t{1}}});
  const auto y = b.input("y", {3, 300});  // long rows, float4 lanes
  const auto amin = b.node("ArgMin", {b.node("Neg", {y})}, {{"axis", std::int64_t{1}}});
  const auto ids = b.input("ids", {4, 6}, DType::I64);  // integers
  const auto imax = b.node("ArgMax", {ids}, {{"axis", std::int64_t{0}}});
  const Graph g = b.finish({am, first, last, amin, imax});
  check(g);
}

TEST(CodegenSelection, GatherNDAndCumSum) {
  GraphBuilder b;
  const auto x = b.input("x", {2, 4, 3, 5});
  const auto i1 =
      b.constant("i1", Tensor::from_vector<std::int64_t>({2, 2, 2}, {0, 1, -1, 2, 1, 0, 1, -3}));
  const auto g1 = b.node("GatherND", {x, i1});  // [2, 2, 3, 5]: tuples of 2 into axes 0,1
  const auto i2 =
      b.constant("i2", Tensor::from_vector<std::int64_t>({2, 3, 1}, {3, 0, -2, 1, 1, 2}));
  const auto g2 = b.node("GatherND", {x, i2}, {{"batch_dims", std::int64_t{1}}});  // [2, 3, 3, 5]
  const auto ax = b.constant("ax", Tensor::from_int64s({1}));
  const auto c1 = b.node("CumSum", {x, ax});
  const auto c2 =
      b.node("CumSum", {b.node("Exp", {x}), b.constant("ax2", Tensor::from_int64s({-1}))},
             {{"exclusive", std::int64_t{1}}, {"reverse", std::int64_t{1}}});
  const auto c3 = b.node("CumSum", {x, ax}, {{"reverse", std::int64_t{1}}});
  const auto c4 = b.node("CumSum", {x, ax}, {{"exclusive", std::int64_t{1}}});
  check(b.finish({g1, g2, c1, c2, c3, c4}));
}

// The CUDA target of the same graph, fused and per node, compiles with NVRTC for sm_80
// and sm_90 (where orchid is built with the CUDA toolkit).
void expect_nvrtc_compiles(const Graph& g) {
  if (!cuda_built()) return;
  for (const auto& groups : {test::fused_groups(g), test::per_node_groups(g)}) {
    const DeviceProgram program =
        generate_device_program(g, plan_of(g, groups), {}, Target::Cuda, {});
    for (int arch : {80, 90}) {
      const NvrtcResult r = nvrtc_compile(program.source, arch);
      EXPECT_TRUE(r.ok) << "sm_" << arch << ":\n" << r.log.substr(0, 4000);
    }
  }
}

std::map<std::string, Attribute> attrs(std::int64_t axis, std::int64_t largest = 1,
                                       std::int64_t sorted = 1) {
  return {{"axis", axis}, {"largest", largest}, {"sorted", sorted}};
}

TEST(CodegenSearch, TopKLargestSmallestTiesNaNsAndIntegers) {
  GraphBuilder b;
  const auto x = b.input("x", {3, 7, 5});
  const auto k3 = b.constant("k3", Tensor::from_int64s({3}));
  const auto a = b.node_outputs("TopK", {x, k3}, attrs(1), 2);
  // Coarse values: many ties, broken by the lower index in both directions.
  const auto coarse =
      b.node("Floor", {b.node("Mul", {x, b.constant("two", Tensor::scalar_f32(2))})});
  const auto k5 = b.constant("k5", Tensor::from_int64s({5}));
  const auto ties_hi = b.node_outputs("TopK", {coarse, k5}, attrs(-1), 2);
  const auto ties_lo = b.node_outputs("TopK", {coarse, k3}, attrs(1, 0, 0), 2);
  // NaN (sqrt of the negative half) ranks above every number, below for smallest.
  const auto nan = b.node("Sqrt", {x});
  const auto nan_hi = b.node_outputs("TopK", {nan, k3}, attrs(0), 2);
  const auto nan_lo = b.node_outputs("TopK", {nan, k3}, attrs(2, 0), 2);
  // A consumer of the values, and a TopK whose values are never used.
  const auto scaled = b.node("Mul", {a[0], b.constant("half", Tensor::scalar_f32(0.5f))});
  const auto ids = b.input("ids", {4, 6}, DType::I64);
  const auto only_indices =
      b.node_outputs("TopK", {ids, b.constant("k4", Tensor::from_int64s({4}))}, attrs(0, 0), 2);
  const auto one = b.node_outputs("TopK", {x, b.constant("k1", Tensor::from_int64s({1}))}, attrs(2),
                                  2);  // k = 1: ArgMax with its value
  const Graph g = b.finish({a[1], scaled, ties_hi[0], ties_hi[1], ties_lo[0], ties_lo[1], nan_hi[0],
                            nan_hi[1], nan_lo[0], nan_lo[1], only_indices[1], one[0], one[1]});
  check(g);
  expect_nvrtc_compiles(g);
}

TEST(CodegenSearch, ScatterElementsReductionsDuplicatesAndNegativeIndices) {
  GraphBuilder b;
  const auto x = b.input("x", {4, 5, 3});
  // Indices smaller than data off the axis; duplicates (-4 is 0) and negatives.
  const auto i0 = b.constant(
      "i0", Tensor::from_vector<std::int64_t>({3, 2, 2}, {0, 1, 3, -4, 2, 2, -1, 0, 0, 0, 1, -3}));
  const auto u0 = b.input("u0", {3, 2, 2});
  const auto none = b.node("ScatterElements", {x, i0, u0}, {{"axis", std::int64_t{0}}});
  const auto add = b.node("ScatterElements", {x, i0, u0},
                          {{"axis", std::int64_t{0}}, {"reduction", std::string("add")}});
  const auto mul = b.node("ScatterElements", {x, i0, u0},
                          {{"axis", std::int64_t{0}}, {"reduction", std::string("mul")}});
  const auto i1 = b.constant(
      "i1", Tensor::from_vector<std::int32_t>({2, 5, 2}, {0, 2, 2, 2,  -1, 0, 1, 1, 0, 0,  //
                                                          2, 1, 0, -3, 1,  1, 2, 2, 0, 1}));
  const auto u1 = b.input("u1", {2, 5, 2});
  const auto last = b.node("ScatterElements", {b.node("Exp", {x}), i1, b.node("Neg", {u1})},
                           {{"axis", std::int64_t{-1}}, {"reduction", std::string("add")}});
  const auto data = b.input("data", {3, 4}, DType::I64);
  const auto iu = b.input("iu", {3, 2}, DType::I64);
  const auto i2 = b.constant("i2", Tensor::from_vector<std::int64_t>({3, 2}, {1, 1, 0, 3, -1, 1}));
  const auto ints = b.node("ScatterElements", {data, i2, iu},
                           {{"axis", std::int64_t{1}}, {"reduction", std::string("add")}});
  const auto relu = b.node("Relu", {mul});  // a consumer in the same kernel
  const Graph g = b.finish({none, add, relu, last, ints});
  check(g);
  expect_nvrtc_compiles(g);
}

TEST(CodegenSearch, ScatterNDSlicesElementsAndDuplicates) {
  GraphBuilder b;
  const auto x = b.input("x", {4, 5, 6});
  // k = 1: whole [5, 6] slices; index 2 twice (the last update wins), -1 is 3.
  const auto i1 = b.constant("i1", Tensor::from_vector<std::int64_t>({3, 1}, {2, -1, 2}));
  const auto s1 = b.node("ScatterND", {x, i1, b.input("u1", {3, 5, 6})});
  // k = 2 with a batch of tuples: rows of 6.
  const auto i2 =
      b.constant("i2", Tensor::from_vector<std::int64_t>({2, 2, 2}, {0, 0, 3, -1, 1, 2, 0, 0}));
  const auto s2 = b.node("ScatterND", {b.node("Sigmoid", {x}), i2, b.input("u2", {2, 2, 6})});
  // k = rank: single elements; one tuple, a scalar update.
  const auto i3 = b.constant("i3", Tensor::from_vector<std::int64_t>({3}, {1, -2, 5}));
  const auto s3 = b.node("ScatterND", {x, i3, b.input("u3", {})});
  const auto y = b.node("Add", {s3, s1});
  const Graph g = b.finish({s1, s2, y});
  check(g);
  expect_nvrtc_compiles(g);
}

TEST(CodegenWindow, PoolingPadsAndCeil) {
  GraphBuilder b;
  const auto x = b.input("x", {2, 3, 13, 11});
  const auto mp = b.node("MaxPool", {x},
                         {{"kernel_shape", std::vector<std::int64_t>{3, 3}},
                          {"strides", std::vector<std::int64_t>{2, 2}},
                          {"pads", std::vector<std::int64_t>{1, 1, 1, 1}},
                          {"ceil_mode", std::int64_t{1}}});
  const auto ap = b.node("AveragePool", {x},
                         {{"kernel_shape", std::vector<std::int64_t>{2, 3}},
                          {"pads", std::vector<std::int64_t>{1, 0, 0, 2}},
                          {"count_include_pad", std::int64_t{1}}});
  const auto ap2 = b.node("AveragePool", {b.node("Relu", {x})},
                          {{"kernel_shape", std::vector<std::int64_t>{3, 2}},
                           {"strides", std::vector<std::int64_t>{2, 1}},
                           {"pads", std::vector<std::int64_t>{1, 1, 1, 0}}});
  check(b.finish({mp, ap, b.node("Relu", {ap2})}));
}

TEST(CodegenLayout, TransposeSliceConcatPadGather) {
  GraphBuilder b;
  const auto x = b.input("x", {2, 3, 5, 7});
  const auto t = b.node("Transpose", {x}, {{"perm", std::vector<std::int64_t>{0, 2, 3, 1}}});
  const auto s = b.node("Slice", {t, b.constant("st", Tensor::from_int64s({4, 0})),
                                  b.constant("en", Tensor::from_int64s({-100, 7})),
                                  b.constant("ax", Tensor::from_int64s({1, 2})),
                                  b.constant("sp", Tensor::from_int64s({-2, 3}))});
  const auto r = b.node("Reshape", {x, b.constant("shape", Tensor::from_int64s({6, 35}))});
  const auto c =
      b.node("Concat", {r, b.node("Exp", {r}), b.node("Neg", {r})}, {{"axis", std::int64_t{0}}});
  const auto pc =
      b.node("Pad", {x, b.constant("pads", Tensor::from_int64s({0, 0, 2, 1, 0, 1, 1, 3})),
                     b.constant("pv", Tensor::scalar_f32(-1.5f))});
  const auto pr =
      b.node("Pad", {x, b.constant("pads2", Tensor::from_int64s({0, 0, 2, 3, 0, 0, 4, 1}))},
             {{"mode", std::string("reflect")}});
  const auto pe =
      b.node("Pad", {x, b.constant("pads3", Tensor::from_int64s({0, 1, 2, 3, 0, 0, 4, 1}))},
             {{"mode", std::string("edge")}});
  const auto g1 = b.node(
      "Gather", {x, b.constant("idx", Tensor::from_vector<std::int64_t>({2, 2}, {-1, 0, 3, -4}))},
      {{"axis", std::int64_t{2}}});
  const auto ids = b.input("ids", {4}, DType::I64);  // random ints in range (random_inputs)
  const auto g2 = b.node("Gather", {b.random_constant("table", {64, 9}), ids});
  check(b.finish({s, c, pc, pr, pe, g1, g2}));
}

TEST(CodegenLayout, ResizeModes) {
  GraphBuilder b;
  const auto x = b.input("x", {1, 2, 5, 7});
  auto resize = [&](const std::string& key, std::vector<float> scales,
                    std::map<std::string, Attribute> attrs) {
    return b.node("Resize", {x, "", b.constant(key, Tensor::from_vector<float>({4}, scales))},
                  std::move(attrs));
  };
  const auto nn = resize("s1", {1, 1, 2, 1.5f}, {{"mode", std::string("nearest")}});
  const auto lin = resize("s2", {1, 1, 2.5f, 0.5f},
                          {{"mode", std::string("linear")},
                           {"coordinate_transformation_mode", std::string("half_pixel")}});
  const auto ac = resize("s3", {1, 1, 3, 2},
                         {{"mode", std::string("linear")},
                          {"coordinate_transformation_mode", std::string("align_corners")}});
  const auto cu = resize("s4", {1, 1, 2, 2}, {{"mode", std::string("cubic")}});
  const auto sym =
      resize("s5", {1, 1, 0.7f, 1.5f},
             {{"mode", std::string("linear")},
              {"coordinate_transformation_mode", std::string("half_pixel_symmetric")}});
  check(b.finish({nn, b.node("Relu", {lin}), ac, cu, sym}));
}

// Antialiased Resize (opset 18): per axis a table of as many taps as the stretched filter
// covers, summed as written-out combinations (few) or as loops over each axis's taps
// (many); keep_aspect_ratio_policy's common scale comes from the shared plan.
TEST(CodegenLayout, ResizeAntialiasAndKeepAspectRatio) {
  GraphBuilder b;
  const auto x = b.input("x", {1, 2, 9, 13});
  auto scaled = [&](const std::string& key, std::vector<float> scales,
                    std::map<std::string, Attribute> attrs) {
    attrs["antialias"] = std::int64_t{1};
    return b.node("Resize", {x, "", b.constant(key, Tensor::from_vector<float>({4}, scales))},
                  std::move(attrs));
  };
  // 4 x 8 taps (loops); 8 x 6 cubic taps excluding outside (loops); 4 taps (written out).
  const auto lin = scaled("s1", {1, 1, 0.5f, 0.3f}, {{"mode", std::string("linear")}});
  const auto cu = scaled("s2", {1, 1, 0.6f, 0.8f},
                         {{"mode", std::string("cubic")},
                          {"exclude_outside", std::int64_t{1}},
                          {"coordinate_transformation_mode", std::string("align_corners")}});
  const auto one = scaled("s3", {1, 1, 1, 0.8f}, {{"mode", std::string("linear")}});
  const auto kept = b.node(
      "Resize", {x, "", "", b.constant("sz", Tensor::from_vector<std::int64_t>({2}, {4, 4}))},
      {{"mode", std::string("linear")},
       {"axes", std::vector<std::int64_t>{2, 3}},
       {"keep_aspect_ratio_policy", std::string("not_larger")}});
  check(b.finish({b.node("Relu", {lin}), cu, one, kept}));
}

// Col2Im as a gather over block offsets, fed by and feeding elementwise ops.
TEST(CodegenLayout, Col2Im) {
  GraphBuilder b;
  auto shape = [&](const std::string& key, std::vector<std::int64_t> v) {
    const auto n = static_cast<std::int64_t>(v.size());
    return b.constant(key, Tensor::from_vector<std::int64_t>({n}, v));
  };
  const auto x = b.input("x", {2, 12, 16});
  const auto plain =
      b.node("Col2Im", {b.node("Exp", {x}), shape("i1", {5, 5}), shape("b1", {2, 2})});
  const auto y = b.input("y", {1, 12, 21});
  const auto strided = b.node("Col2Im", {y, shape("i2", {6, 7}), shape("b2", {2, 3})},
                              {{"strides", std::vector<std::int64_t>{2, 1}},
                               {"dilations", std::vector<std::int64_t>{2, 1}},
                               {"pads", std::vector<std::int64_t>{1, 0, 1, 2}}});
  check(b.finish({b.node("Relu", {plain}), strided}));
}

TEST(CodegenLinear, MatMulShapes) {
  GraphBuilder b;
  const auto a = b.input("a", {2, 1, 67, 33});
  const auto w = b.input("w", {3, 33, 70});
  const auto mm = b.node("MatMul", {a, w});  // [2, 3, 67, 70]: batch broadcast, odd tiles
  const auto y = b.node("Relu", {b.node("Add", {mm, b.random_constant("bias", {70})})});
  const auto v = b.input("v", {33});
  const auto vm = b.node("MatMul", {v, b.random_constant("m", {33, 5})});     // vector x matrix
  const auto mv = b.node("MatMul", {b.random_constant("m2", {129, 33}), v});  // matrix x vector
  const auto pre =
      b.node("MatMul", {b.node("Exp", {b.node("Neg", {a})}), b.random_constant("w2", {33, 1})});
  check(b.finish({y, vm, mv, pre}), 4);  // bias + ReLU epilogue and Exp prologue fused
}

TEST(CodegenLinear, ConvolutionShapes) {
  GraphBuilder b;
  const auto x = b.input("x", {1, 4, 15, 13});
  const auto grouped = b.node("Conv", {x, b.random_constant("wg", {32, 2, 3, 3})},
                              {{"group", std::int64_t{2}},
                               {"strides", std::vector<std::int64_t>{2, 2}},
                               {"pads", std::vector<std::int64_t>{1, 1, 1, 1}}});
  const auto biased = b.node("Add", {grouped, b.random_constant("bias", {32, 1, 1})});
  const auto depthwise = b.node("Conv", {x, b.random_constant("wd", {4, 1, 3, 3})},
                                {{"group", std::int64_t{4}},
                                 {"dilations", std::vector<std::int64_t>{2, 2}},
                                 {"pads", std::vector<std::int64_t>{2, 2, 2, 2}}});
  const auto x1 = b.input("x1", {2, 20, 37});
  const auto conv1d = b.node("Conv", {x1, b.random_constant("w1", {17, 20, 5})},
                             {{"strides", std::vector<std::int64_t>{3}}});
  const auto up = b.node("ConvTranspose", {x, b.random_constant("wt", {4, 3, 3, 3})},
                         {{"strides", std::vector<std::int64_t>{2, 2}},
                          {"pads", std::vector<std::int64_t>{1, 1, 1, 1}},
                          {"output_padding", std::vector<std::int64_t>{1, 0}}});
  check(b.finish({b.node("Relu", {biased}), depthwise, conv1d, up}));
}

TEST(CodegenIndexing, WideIndicesForHugeTensors) {
  // Code generation only: a tensor past 2^31 elements switches the kernel to 64-bit
  // index arithmetic (no device here holds 8 GiB for it).
  GraphBuilder b;
  const auto x = b.input("x", {3, 1024, 1024, 1024});
  const Graph g = b.finish({b.node("Relu", {x})});
  const DeviceProgram p = generate_device_program(g, plan_of(g, {{0}}), {}, Target::OpenCL);
  EXPECT_NE(p.source.find("for (i64 i = "), std::string::npos) << p.source;
  const Graph small = [] {
    GraphBuilder s;
    return s.finish({s.node("Relu", {s.input("x", {7})})});
  }();
  const DeviceProgram q = generate_device_program(small, plan_of(small, {{0}}), {}, Target::OpenCL);
  EXPECT_NE(q.source.find("for (i32 i = "), std::string::npos) << q.source;
}

TEST(CodegenIndexing, SearchLoopsWidenWithTheTensor) {
  // TopK's passes and ScatterElements' update loop count in 64 bits past 2^31 elements.
  GraphBuilder b;
  const auto x = b.input("x", {3, 1024, 1024, 1024});
  const auto top =
      b.node_outputs("TopK", {x, b.constant("k", Tensor::from_int64s({2}))}, attrs(3), 2);
  const auto idx = b.constant("i", Tensor::from_vector<std::int64_t>({1, 1, 1, 2}, {5, -1}));
  const auto scattered =
      b.node("ScatterElements", {x, idx, b.input("u", {1, 1, 1, 2})}, {{"axis", std::int64_t{3}}});
  const Graph g = b.finish({top[0], top[1], scattered});
  const DeviceProgram p =
      generate_device_program(g, plan_of(g, test::per_node_groups(g)), {}, Target::Cuda);
  EXPECT_NE(p.source.find("for (i64 p"), std::string::npos) << p.source;
  EXPECT_NE(p.source.find("for (i64 j"), std::string::npos) << p.source;
  EXPECT_EQ(p.source.find("for (i32 "), std::string::npos) << p.source;
  if (cuda_built()) {
    const NvrtcResult r = nvrtc_compile(p.source, 90);
    EXPECT_TRUE(r.ok) << r.log.substr(0, 4000);
  }
}

}  // namespace
}  // namespace orchid::codegen
