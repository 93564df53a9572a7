// Which linear stages of a CUDA program map to cuBLASLt / cuDNN, with which epilogue,
// strides and operands: the host-side descriptors, checked without a GPU. (The calls
// themselves run in scripts/gpu-check.sh's vendor column.)
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>

#include "codegen/plan_codegen.hpp"
#include "codegen/vendor_linear.hpp"
#include "codegen_test_util.hpp"
#include "util/error.hpp"

namespace orchid::codegen {
namespace {

using test::GraphBuilder;
using test::plan_of;

// Each graph as one plan kernel, CUDA target, vendor backend.
DeviceProgram vendor_program(const Graph& g, LinearBackend backend = LinearBackend::Vendor) {
  std::vector<std::size_t> all;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) all.push_back(i);
  CodegenOptions options;
  options.linear_backend = backend;
  return generate_device_program(g, plan_of(g, {all}), {}, Target::Cuda, options);
}

// The vendor call of the launch whose ops start with `anchor` (exactly one such launch).
const VendorCall* call_of(const DeviceProgram& p, const std::string& anchor) {
  const VendorCall* found = nullptr;
  int launches = 0;
  for (const auto& l : p.launches) {
    if (l.ops.rfind(anchor, 0) != 0) continue;
    ++launches;
    if (l.vendor >= 0) found = p.vendor_calls.at(static_cast<std::size_t>(l.vendor)).get();
  }
  EXPECT_EQ(launches, 1) << anchor;
  return found;
}

Tensor scalar(float v) {
  return Tensor::scalar_f32(v);
}

TEST(VendorLinear, GemmWithBiasAndRelu) {
  GraphBuilder b;
  const auto x = b.input("x", {6, 32});
  const auto mm = b.node("MatMul", {x, b.random_constant("w", {32, 48})});
  const auto y = b.node("Relu", {b.node("Add", {mm, b.random_constant("bias", {48})})});
  const DeviceProgram p = vendor_program(b.finish({y}));
  const VendorCall* c = call_of(p, "MatMul");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->kind, VendorCall::Kind::Gemm);
  EXPECT_EQ(c->gemm.activation, VendorActivation::Relu);
  ASSERT_TRUE(c->gemm.bias.has_value());
  EXPECT_EQ(c->gemm.bias->region, Region::Weights);
  EXPECT_EQ(c->gemm.bias->name, "bias");
  EXPECT_EQ(c->gemm.m, 6);
  EXPECT_EQ(c->gemm.n, 48);
  EXPECT_EQ(c->gemm.k, 32);
  EXPECT_EQ(c->gemm.batch, 1);
  EXPECT_EQ(c->gemm.a.region, Region::Inputs);
  EXPECT_EQ(c->gemm.b.name, "w");
  EXPECT_EQ(c->gemm.c.region, Region::Arena);
  EXPECT_EQ(c->describe(), "cublasLt matmul [bias+relu]");
}

// cuBLASLt's GELU epilogue is the tanh approximation: an erf GELU stage stays generated
// (a vendor call must compute its stage exactly), and says why.
TEST(VendorLinear, GemmWithErfGeluStaysGenerated) {
  GraphBuilder b;
  const auto x = b.input("x", {4, 16});
  const auto mm = b.node("MatMul", {x, b.random_constant("w", {16, 8})});
  const auto h = b.node("Add", {b.random_constant("bias", {8}), mm});  // bias on the left
  const auto s = b.node("Div", {h, b.constant("sqrt2", scalar(std::sqrt(2.0f)))});
  const auto e = b.node("Add", {b.node("Erf", {s}), b.constant("one", scalar(1))});
  const auto y = b.node("Mul", {b.node("Mul", {h, e}), b.constant("half", scalar(0.5f))});
  const DeviceProgram p = vendor_program(b.finish({y}));
  EXPECT_EQ(call_of(p, "MatMul"), nullptr);
  for (const auto& l : p.launches) {
    if (l.ops.rfind("MatMul", 0) == 0) {
      EXPECT_NE(l.vendor_refusal.find("tanh approximation"), std::string::npos) << l.vendor_refusal;
    }
  }
}

// The alignment cuBLASLt is told: what the offset and every batch's step allow, at most 256.
TEST(VendorLinear, OperandAlignmentIsWhatOffsetAndBatchStrideAllow) {
  DeviceTensor t;
  t.offset = 0;
  EXPECT_EQ(operand_alignment(t, 0), 256u);
  t.offset = 128 + 1024;
  EXPECT_EQ(operand_alignment(t, 0), 128u);
  t.offset = 64;
  EXPECT_EQ(operand_alignment(t, 0), 64u);
  t.offset = 512;
  EXPECT_EQ(operand_alignment(t, 197 * 64), 256u);  // 197*64 floats: a multiple of 256 bytes
  EXPECT_EQ(operand_alignment(t, 10 * 3), 8u);      // 120 bytes per batch
  EXPECT_EQ(operand_alignment(t, 1), 4u);
}

// Every matmul the zoo's BERT gives cuBLASLt is planned on 256-byte boundaries, so the
// library's fastest kernels apply (its weights once sat at 128 mod 256 and read wrongly).
TEST(VendorLinear, BertOperandsAreFullyAligned) {
  const Orchestration o = test::orchestrate_for_a100(test::load_zoo_model("bert_base").graph);
  CodegenOptions co;
  co.linear_backend = LinearBackend::Vendor;
  const DeviceProgram p =
      generate_device_program(o.fission.graph, o.optimal, o.fission.alternatives, Target::Cuda, co);
  int gemms = 0;
  for (const auto& call : p.vendor_calls) {
    if (call->kind != VendorCall::Kind::Gemm) continue;
    ++gemms;
    const VendorGemm& g = call->gemm;
    EXPECT_EQ(operand_alignment(g.a, g.stride_a), 256u) << g.a.name;
    EXPECT_EQ(operand_alignment(g.b, g.stride_b), 256u) << g.b.name;
    EXPECT_EQ(operand_alignment(g.c, g.stride_c), 256u) << g.c.name;
  }
  EXPECT_GT(gemms, 30);
}

TEST(VendorLinear, BatchedGemmWithSharedWeightsAndTransposedB) {
  GraphBuilder b;
  const auto q = b.input("q", {2, 3, 10, 16});
  const auto k = b.input("k", {2, 3, 12, 16});
  const auto kt = b.node("Transpose", {k}, {{"perm", std::vector<std::int64_t>{0, 1, 3, 2}}});
  const auto scores = b.node("MatMul", {q, kt});  // [2, 3, 10, 12]
  const auto proj = b.node("MatMul", {q, b.random_constant("w", {16, 20})});
  const Graph g = b.finish({scores, proj});
  const DeviceProgram p = vendor_program(g);
  int calls = 0;
  for (const auto& l : p.launches) {
    ASSERT_GE(l.vendor, 0) << l.ops;
    const VendorGemm& gm = p.vendor_calls[static_cast<std::size_t>(l.vendor)]->gemm;
    ++calls;
    EXPECT_EQ(gm.batch, 6);
    EXPECT_EQ(gm.m, 10);
    EXPECT_EQ(gm.stride_a, 10 * 16);
    if (gm.transpose_b) {
      EXPECT_EQ(gm.b.name, "k");  // the Transpose is a flag, not a copy
      EXPECT_EQ(gm.n, 12);
      EXPECT_EQ(gm.stride_b, 12 * 16);
      EXPECT_EQ(gm.stride_c, 10 * 12);
    } else {
      EXPECT_EQ(gm.b.name, "w");
      EXPECT_EQ(gm.stride_b, 0);  // one weight matrix for every batch
      EXPECT_EQ(gm.stride_c, 10 * 20);
    }
  }
  EXPECT_EQ(calls, 2);
}

TEST(VendorLinear, StagesTheLibraryCannotComputeStayGenerated) {
  GraphBuilder b;
  const auto x = b.input("x", {2, 1, 6, 8});
  // A prologue (Exp) on A, a partly broadcast batch, a bias that is not per column, and
  // an epilogue other than bias/ReLU/GELU.
  const auto pro = b.node("MatMul", {b.node("Exp", {x}), b.random_constant("w1", {8, 4})});
  const auto part = b.node("MatMul", {x, b.input("w2", {3, 8, 5})});
  const auto mm3 = b.node("MatMul", {x, b.random_constant("w3", {8, 7})});
  const auto rowbias = b.node("Add", {mm3, b.random_constant("rb", {6, 1})});
  const auto mm4 = b.node("MatMul", {x, b.random_constant("w4", {8, 9})});
  const auto sig = b.node("Sigmoid", {mm4});
  const Graph g = b.finish({pro, part, rowbias, sig});
  const DeviceProgram p = vendor_program(g);
  ASSERT_EQ(p.launches.size(), 4u);
  for (const auto& l : p.launches) EXPECT_EQ(l.vendor, -1) << l.ops;
  std::string why;
  StageSpec spec;
  spec.family = Family::MatMul;
  spec.roots = {&g.nodes[2]};  // the partly broadcast MatMul
  ASSERT_EQ(g.nodes[2].op_type, "MatMul");
  spec.stores = {g.nodes[2].outputs[0]};
  auto no_inline = [](const std::string&) -> const Node* { return nullptr; };
  auto somewhere = [&](const std::string& t) {
    return DeviceTensor{t, Region::Arena, 0, DType::F32, g.tensor(t).shape};
  };
  EXPECT_FALSE(match_vendor_call(g, spec, no_inline, somewhere, &why));
  EXPECT_EQ(why, "a partly broadcast batch");
}

TEST(VendorLinear, ConvWithChannelBiasAndRelu) {
  GraphBuilder b;
  const auto x = b.input("x", {2, 8, 15, 13});
  const auto conv = b.node("Conv", {x, b.random_constant("w", {32, 4, 3, 3})},
                           {{"group", std::int64_t{2}},
                            {"strides", std::vector<std::int64_t>{2, 2}},
                            {"dilations", std::vector<std::int64_t>{1, 2}},
                            {"pads", std::vector<std::int64_t>{1, 2, 1, 2}}});
  const auto y = b.node("Relu", {b.node("Add", {conv, b.random_constant("bias", {32, 1, 1})})});
  const auto odd = b.node("Conv", {x, b.random_constant("w2", {16, 8, 3, 3})},
                          {{"pads", std::vector<std::int64_t>{0, 1, 1, 0}}});  // asymmetric
  const DeviceProgram p = vendor_program(b.finish({y, odd}));
  int mapped = 0;
  for (const auto& l : p.launches) {
    if (l.vendor < 0) continue;
    ++mapped;
    const VendorCall& c = *p.vendor_calls[static_cast<std::size_t>(l.vendor)];
    ASSERT_EQ(c.kind, VendorCall::Kind::Conv);
    EXPECT_EQ(c.conv.activation, VendorActivation::Relu);
    ASSERT_TRUE(c.conv.bias.has_value());
    EXPECT_EQ(c.conv.bias->name, "bias");
    EXPECT_EQ(c.conv.groups, 2);
    EXPECT_EQ(c.conv.k, 32);
    EXPECT_EQ(c.conv.c, 8);
    EXPECT_EQ(c.conv.pad_h, 1);
    EXPECT_EQ(c.conv.pad_w, 2);
    EXPECT_EQ(c.conv.stride_h, 2);
    EXPECT_EQ(c.conv.dil_w, 2);
    EXPECT_EQ(c.describe(), "cudnn conv+bias+relu");
  }
  EXPECT_EQ(mapped, 1);
}

TEST(VendorLinear, OnlyTheCudaTargetWithAVendorBackendGetsCalls) {
  GraphBuilder b;
  const auto mm = b.node("MatMul", {b.input("x", {4, 8}), b.random_constant("w", {8, 4})});
  const Graph g = b.finish({mm});
  EXPECT_TRUE(vendor_program(g, LinearBackend::Generated).vendor_calls.empty());
  EXPECT_EQ(vendor_program(g, LinearBackend::Auto).vendor_calls.size(), 1u);
  CodegenOptions options;
  options.linear_backend = LinearBackend::Vendor;
  EXPECT_TRUE(generate_device_program(g, plan_of(g, {{0}}), {}, Target::OpenCL, options)
                  .vendor_calls.empty());
  EXPECT_EQ(parse_linear_backend("auto"), LinearBackend::Auto);
  EXPECT_THROW(parse_linear_backend("cublas"), Error);
}

// On real models (optimal plans for the a100 model): the linear stages that map, by call.
TEST(VendorLinear, TinyZooModelsMapTheirLinearStages) {
  for (const char* name : {"tiny_mlp", "tiny_conv", "tiny_attention"}) {
    const Orchestration o = test::orchestrate_for_a100(test::load_zoo_model(name).graph);
    CodegenOptions co;
    co.linear_backend = LinearBackend::Vendor;
    const DeviceProgram p = generate_device_program(o.fission.graph, o.optimal,
                                                    o.fission.alternatives, Target::Cuda, co);
    int linear = 0, gemm = 0, conv = 0;
    for (const auto& l : p.launches) {
      if (l.family != "matmul" && l.family != "conv") continue;
      ++linear;
      if (l.vendor < 0) {
        std::cout << name << ": " << l.ops << " stays generated: " << l.vendor_refusal << "\n";
        EXPECT_FALSE(l.vendor_refusal.empty());
        continue;
      }
      const VendorCall& c = *p.vendor_calls.at(static_cast<std::size_t>(l.vendor));
      (c.kind == VendorCall::Kind::Gemm ? gemm : conv) += 1;
      // Every operand lies inside the buffer the program allocates for its region.
      const auto inside = [&](const DeviceTensor& t) {
        const std::int64_t end = t.offset + shape_numel(t.shape) * 4;
        switch (t.region) {
          case Region::Arena:
            return end <= p.arena_bytes;
          case Region::Scratch:
            return end <= p.scratch_bytes;
          case Region::Weights:
            return end <= p.weights_bytes;
          case Region::Inputs:
            return end <= p.inputs_bytes;
        }
        return false;
      };
      if (c.kind == VendorCall::Kind::Gemm) {
        EXPECT_TRUE(inside(c.gemm.a) && inside(c.gemm.b) && inside(c.gemm.c)) << name;
      } else {
        EXPECT_TRUE(inside(c.conv.x) && inside(c.conv.w) && inside(c.conv.y)) << name;
      }
    }
    std::cout << name << ": " << linear << " linear stages, " << gemm << " cuBLASLt, " << conv
              << " cuDNN\n";
    EXPECT_GT(gemm + conv, 0) << name << ": no linear stage maps to a vendor call";
    if (std::string(name) == "tiny_conv") {
      EXPECT_GT(conv, 0);
    } else {
      EXPECT_GT(gemm, 0);
    }
  }
}

}  // namespace
}  // namespace orchid::codegen
