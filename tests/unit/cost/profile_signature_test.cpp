// Kernel signatures: structurally identical kernels hash equal wherever they come from
// (names, node order, weight values do not matter); shapes, attributes, small constant
// values, constness, wiring and the device do.
#include <gtest/gtest.h>

#include "cost/kernel_signature.hpp"
#include "fission/kernel_view.hpp"
#include "ir/op_registry.hpp"

namespace orchid {
namespace {

struct Builder {
  Graph g;
  std::string prefix;
  explicit Builder(std::string p) : prefix(std::move(p)) { g.name = "g" + prefix; }
  std::string n(const std::string& s) const { return prefix + s; }
  void input(const std::string& name, Shape shape, DType dtype = DType::F32) {
    g.set_type(n(name), dtype, std::move(shape));
    g.inputs.push_back(n(name));
  }
  void constant(const std::string& name, Tensor value) {
    g.set_constant(n(name), std::move(value));
  }
  void node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
            std::map<std::string, Attribute> attrs = {}) {
    Node node;
    node.name = n(op + std::to_string(g.nodes.size()));
    node.op_type = op;
    for (auto& s : in) node.inputs.push_back(s.empty() ? s : n(s));
    for (auto& s : out) node.outputs.push_back(n(s));
    node.attributes = std::move(attrs);
    g.nodes.push_back(std::move(node));
  }
  Graph done(std::vector<std::string> outputs) {
    for (auto& o : outputs) g.outputs.push_back(n(o));
    infer_shapes(g);
    g.validate();
    return g;
  }
};

std::uint64_t sig(const Graph& g, std::vector<std::size_t> nodes, const std::string& dev = "cpu") {
  return kernel_signature(make_kernel_view(g, std::move(nodes)), dev);
}

Tensor filled(Shape shape, float v) {
  Tensor t(DType::F32, std::move(shape));
  for (float& x : t.values<float>()) x = v;
  return t;
}

// x -> MatMul(W) -> Add(b) -> Relu -> y
Graph linear_relu(const std::string& prefix, std::int64_t m, float weight_value,
                  std::int64_t k = 16) {
  Builder b(prefix);
  b.input("x", {m, k});
  b.constant("W", filled({k, 32}, weight_value));
  b.constant("bias", filled({32}, weight_value));
  b.node("MatMul", {"x", "W"}, {"a"});
  b.node("Add", {"a", "bias"}, {"c"});
  b.node("Relu", {"c"}, {"y"});
  return b.done({"y"});
}

TEST(ProfileSignature, IdenticalStructureInAnotherGraphHashesEqual) {
  const Graph a = linear_relu("first_", 8, 0.5f);
  const Graph b = linear_relu("other_model/layer3/", 8, -2.0f);  // other names, weights
  EXPECT_EQ(sig(a, {0, 1, 2}), sig(b, {0, 1, 2}));
  EXPECT_EQ(sig(a, {1, 2}), sig(b, {1, 2}));
  EXPECT_EQ(kernel_canonical_form(make_kernel_view(a, {0, 1, 2}), "cpu"),
            kernel_canonical_form(make_kernel_view(b, {0, 1, 2}), "cpu"));
}

TEST(ProfileSignature, ShapesNodeSetsAndDeviceMatter) {
  const Graph a = linear_relu("a_", 8, 1.0f);
  const Graph taller = linear_relu("a_", 16, 1.0f);
  const Graph deeper = linear_relu("a_", 8, 1.0f, 64);
  EXPECT_NE(sig(a, {0, 1, 2}), sig(taller, {0, 1, 2}));
  EXPECT_NE(sig(a, {0, 1, 2}), sig(deeper, {0, 1, 2}));
  EXPECT_NE(sig(a, {0, 1, 2}), sig(a, {0, 1}));
  EXPECT_NE(sig(a, {1, 2}), sig(a, {2}));
  EXPECT_NE(sig(a, {0, 1, 2}, "cpu"), sig(a, {0, 1, 2}, "cpu2"));
}

TEST(ProfileSignature, AttributesMatter) {
  auto transpose = [](std::vector<std::int64_t> perm) {
    Builder b("t_");
    b.input("x", {4, 8, 16});
    b.node("Transpose", {"x"}, {"y"}, {{"perm", perm}});
    return b.done({"y"});
  };
  EXPECT_NE(sig(transpose({0, 2, 1}), {0}), sig(transpose({1, 0, 2}), {0}));
  EXPECT_EQ(sig(transpose({0, 2, 1}), {0}), sig(transpose({0, 2, 1}), {0}));
}

TEST(ProfileSignature, SmallConstantValuesMatterWeightValuesDoNot) {
  auto reduce = [](std::int64_t axis, float scale) {
    Builder b("r_");
    b.input("x", {4, 8, 16});
    b.constant("axes", Tensor::from_int64s({axis}));
    b.constant("s", filled({4, 8, 16}, scale));  // a weight: 512 values
    b.node("Mul", {"x", "s"}, {"m"});
    b.node("ReduceSum", {"m", "axes"}, {"y"}, {{"keepdims", std::int64_t{1}}});
    return b.done({"y"});
  };
  EXPECT_NE(sig(reduce(1, 1.0f), {0, 1}), sig(reduce(2, 1.0f), {0, 1}));
  EXPECT_EQ(sig(reduce(1, 1.0f), {0, 1}), sig(reduce(1, 3.0f), {0, 1}));
}

TEST(ProfileSignature, ConstantVersusRuntimeInputMatters) {
  Builder a("c_");
  a.input("x", {64});
  a.constant("w", filled({64}, 1.0f));
  a.node("Add", {"x", "w"}, {"y"});
  Builder b("c_");
  b.input("x", {64});
  b.input("w", {64});
  b.node("Add", {"x", "w"}, {"y"});
  EXPECT_NE(sig(a.done({"y"}), {0}), sig(b.done({"y"}), {0}));
}

TEST(ProfileSignature, WiringMatters) {
  auto sub = [](bool swapped) {
    Builder b("w_");
    b.input("x", {64});
    b.input("z", {64});
    b.node("Exp", {"x"}, {"e"});
    b.node("Sub", swapped ? std::vector<std::string>{"z", "e"} : std::vector<std::string>{"e", "z"},
           {"y"});
    return b.done({"y"});
  };
  EXPECT_NE(sig(sub(false), {0, 1}), sig(sub(true), {0, 1}));
}

TEST(ProfileSignature, IndependentBranchesInAnotherOrderHashEqual) {
  auto diamond = [](bool exp_first) {
    Builder b("d_");
    b.input("x", {64});
    if (exp_first) {
      b.node("Exp", {"x"}, {"c"});
      b.node("Neg", {"x"}, {"d"});
    } else {
      b.node("Neg", {"x"}, {"d"});
      b.node("Exp", {"x"}, {"c"});
    }
    b.node("Add", {"c", "d"}, {"y"});
    return b.done({"y"});
  };
  EXPECT_EQ(sig(diamond(true), {0, 1, 2}), sig(diamond(false), {0, 1, 2}));
}

TEST(ProfileSignature, WhichOutputsAreWrittenMatters) {
  Builder b("o_");
  b.input("x", {64});
  b.node("Exp", {"x"}, {"e"});
  b.node("Neg", {"e"}, {"y"});
  b.node("Relu", {"e"}, {"z"});
  const Graph g = b.done({"y", "z"});
  // {Exp, Neg}: e is also read by Relu outside, so it is written; compare a graph where
  // it is not.
  Builder c("o_");
  c.input("x", {64});
  c.node("Exp", {"x"}, {"e"});
  c.node("Neg", {"e"}, {"y"});
  const Graph h = c.done({"y"});
  EXPECT_NE(sig(g, {0, 1}), sig(h, {0, 1}));
  EXPECT_EQ(signature_hex(0x12ab).size(), 16u);
  EXPECT_EQ(kernel_summary(make_kernel_view(h, {0, 1})), "Exp+Neg -> f32[64]");
}

}  // namespace
}  // namespace orchid
