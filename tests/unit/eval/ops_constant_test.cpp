// Shape, Size, ConstantOfShape, Range, Identity, Dropout, EyeLike.
#include <gtest/gtest.h>

#include "op_test_util.hpp"
#include "util/error.hpp"

namespace orchid {
namespace {

using testing::f32;
using testing::i64;
using testing::OpInput;
using testing::run_single_op;
using testing::single_op_graph;
using testing::tensors_close;

TEST(ConstantShape, StartEndAttributes) {
  Tensor x(DType::F32, {2, 3, 4, 5});
  EXPECT_EQ(run_single_op("Shape", {{"x", x}})[0], i64({4}, {2, 3, 4, 5}));
  EXPECT_EQ(run_single_op("Shape", {{"x", x}},
                          {{"start", std::int64_t{1}}, {"end", std::int64_t{-1}}})[0],
            i64({2}, {3, 4}));
  EXPECT_EQ(run_single_op("Shape", {{"x", x}}, {{"start", std::int64_t{-10}}})[0],
            i64({4}, {2, 3, 4, 5}));
  EXPECT_EQ(
      run_single_op("Shape", {{"x", x}}, {{"start", std::int64_t{3}}, {"end", std::int64_t{1}}})[0]
          .shape(),
      (Shape{0}));
  EXPECT_EQ(run_single_op("Size", {{"x", Tensor(DType::I32, {2, 3})}})[0], i64({}, {6}));
}

TEST(ConstantConstantOfShape, ValueAndDefault) {
  auto y = run_single_op("ConstantOfShape", {{"s", Tensor::from_int64s({2, 3}), true}});
  EXPECT_EQ(y[0], Tensor(DType::F32, {2, 3}));
  auto z = run_single_op("ConstantOfShape", {{"s", Tensor::from_int64s({3}), true}},
                         {{"value", i64({1}, {7})}});
  EXPECT_EQ(z[0], i64({3}, {7, 7, 7}));
  auto e = run_single_op("ConstantOfShape", {{"s", Tensor::from_int64s({}), true}},
                         {{"value", f32({1}, {2.5f})}});
  EXPECT_EQ(e[0], f32({}, {2.5f}));
  EXPECT_THROW(single_op_graph("ConstantOfShape", {{"s", Tensor::from_int64s({2})}}),
               UnsupportedError);
}

TEST(ConstantRange, IntAndFloat) {
  auto y = run_single_op(
      "Range", {{"a", i64({}, {10}), true}, {"b", i64({}, {1}), true}, {"c", i64({}, {-3}), true}});
  EXPECT_EQ(y[0], i64({3}, {10, 7, 4}));
  auto z = run_single_op(
      "Range",
      {{"a", f32({}, {1}), true}, {"b", f32({}, {2}), true}, {"c", f32({}, {0.25f}), true}});
  EXPECT_TRUE(tensors_close(z[0], f32({4}, {1, 1.25f, 1.5f, 1.75f})));
  auto i = run_single_op("Range", {{"a", Tensor::from_vector<std::int32_t>({}, {0}), true},
                                   {"b", Tensor::from_vector<std::int32_t>({}, {5}), true},
                                   {"c", Tensor::from_vector<std::int32_t>({}, {2}), true}});
  EXPECT_EQ(i[0], Tensor::from_vector<std::int32_t>({3}, {0, 2, 4}));
  auto empty = run_single_op(
      "Range", {{"a", i64({}, {3}), true}, {"b", i64({}, {1}), true}, {"c", i64({}, {1}), true}});
  EXPECT_EQ(empty[0].shape(), (Shape{0}));
  EXPECT_THROW(
      single_op_graph("Range",
                      {{"a", i64({}, {0})}, {"b", i64({}, {5}), true}, {"c", i64({}, {1}), true}}),
      UnsupportedError);
}

TEST(ConstantIdentityDropout, CopyAndRefusals) {
  Tensor b = Tensor::from_vector<bool>({3}, {true, false, true});
  EXPECT_EQ(run_single_op("Identity", {{"x", b}})[0], b);
  Tensor x = f32({2}, {1.5f, -2});
  EXPECT_EQ(run_single_op("Dropout", {{"x", x}, {"r", f32({}, {0.5f}), true}})[0], x);
  EXPECT_EQ(run_single_op(
                "Dropout",
                {{"x", x}, {"", Tensor()}, {"t", Tensor::from_vector<bool>({}, {false}), true}})[0],
            x);
  EXPECT_THROW(single_op_graph("Dropout", {{"x", x}}, {}, 2), UnsupportedError);
  EXPECT_THROW(single_op_graph(
                   "Dropout",
                   {{"x", x}, {"", Tensor()}, {"t", Tensor::from_vector<bool>({}, {true}), true}}),
               UnsupportedError);
  EXPECT_THROW(
      single_op_graph("Dropout",
                      {{"x", x}, {"", Tensor()}, {"t", Tensor::from_vector<bool>({}, {false})}}),
      UnsupportedError);
}

TEST(ConstantEyeLike, OffsetAndDtype) {
  auto y = run_single_op("EyeLike", {{"x", Tensor(DType::F32, {2, 3})}}, {{"k", std::int64_t{1}}});
  EXPECT_TRUE(tensors_close(y[0], f32({2, 3}, {0, 1, 0, 0, 0, 1})));
  auto z =
      run_single_op("EyeLike", {{"x", Tensor(DType::F32, {2, 2})}}, {{"dtype", std::int64_t{7}}});
  EXPECT_EQ(z[0], i64({2, 2}, {1, 0, 0, 1}));
}

}  // namespace
}  // namespace orchid
