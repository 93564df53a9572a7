// Concat and Split as block copies (runtime/copy_kernels.hpp) give exactly what the
// reference kernels give (bit for bit: they only move bytes), for any axis and dtype.
#include <gtest/gtest.h>

#include "eval/reference/reference_kernels.hpp"
#include "runtime/copy_kernels.hpp"
#include "small_graph.hpp"

namespace orchid {
namespace {

Tensor counting(DType dtype, Shape shape, int start) {
  Tensor t(dtype, std::move(shape));
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    if (dtype == DType::F32) t.data<float>()[i] = static_cast<float>(start + i);
    if (dtype == DType::I64) t.data<std::int64_t>()[i] = start + i;
  }
  return t;
}

void expect_same(const Node& n, const std::vector<const Tensor*>& ins,
                 const std::vector<Tensor>& out_shapes) {
  std::vector<Tensor> want = out_shapes, have = out_shapes;
  find_reference_kernel(n.op_type)(n, ins, want);
  find_copy_kernel(n.op_type)(n, ins, have);
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(have[i], want[i]) << n.op_type << i;
}

TEST(CopyKernels, ConcatMatchesTheReferenceOnEveryAxis) {
  for (DType dtype : {DType::F32, DType::I64}) {
    for (std::int64_t axis : {0, 1, 2, -1}) {
      Shape a{2, 3, 4}, b{2, 3, 4};
      const std::size_t ax = static_cast<std::size_t>(axis < 0 ? axis + 3 : axis);
      b[ax] = 5;
      Shape y = a;
      y[ax] = a[ax] + b[ax] + a[ax];
      const Tensor x0 = counting(dtype, a, 0), x1 = counting(dtype, b, 100),
                   x2 = counting(dtype, a, 1000);
      Node n;
      n.op_type = "Concat";
      n.attributes["axis"] = axis;
      expect_same(n, {&x0, &x1, &x2}, {Tensor(dtype, y)});
    }
  }
}

TEST(CopyKernels, SplitMatchesTheReference) {
  const Tensor x = counting(DType::F32, {2, 7, 3}, 0);
  const Tensor sizes = runtime_test::i64({3}, {2, 4, 1});
  Node n;
  n.op_type = "Split";
  n.attributes["axis"] = std::int64_t{1};
  expect_same(n, {&x, &sizes},
              {Tensor(DType::F32, {2, 2, 3}), Tensor(DType::F32, {2, 4, 3}),
               Tensor(DType::F32, {2, 1, 3})});
}

}  // namespace
}  // namespace orchid
