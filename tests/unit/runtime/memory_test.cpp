// The executor's memory: aligned buffers with checked sizes, the pool users share one
// after another, and the memory plan that places every tensor.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>

#include "runtime/aligned_buffer.hpp"
#include "runtime/memory_plan.hpp"
#include "runtime/memory_pool.hpp"
#include "small_graph.hpp"

namespace orchid {
namespace {

using runtime_test::make_graph;
using runtime_test::one_kernel_plan;
using runtime_test::pattern;

bool aligned64(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 64 == 0;
}

TEST(AlignedBuffer, IsAlignedZeroedAndSized) {
  AlignedBuffer b(100);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_TRUE(aligned64(b.data()));
  EXPECT_EQ(b.size(), 100);
  for (int i = 0; i < 128; ++i) EXPECT_EQ(b.data()[i], std::byte{0});  // + spare line
  AlignedBuffer empty(0);
  EXPECT_NE(empty.data(), nullptr);
  AlignedBuffer moved = std::move(b);
  EXPECT_EQ(moved.size(), 100);
}

// Resident memory of this process in bytes (/proc/self/statm's second field, in pages).
std::int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// An arena is built long before a plan first runs; its pages must not count until then
// (the executor's build peaks meanwhile: offset tables of a tensor's size).
TEST(AlignedBuffer, CostsNoResidentMemoryUntilWritten) {
  constexpr std::int64_t kBytes = 64 << 20;
  const std::int64_t before = resident_bytes();
  AlignedBuffer b(kBytes);
  const std::int64_t allocated = resident_bytes();
  EXPECT_LT(allocated - before, kBytes / 8);
  std::memset(b.data(), 1, static_cast<std::size_t>(kBytes));
  EXPECT_GT(resident_bytes() - before, kBytes / 2);
  AlignedBuffer fresh(kBytes);
  for (std::int64_t i = 0; i < kBytes; i += 4093) ASSERT_EQ(fresh.data()[i], std::byte{0});
}

TEST(AlignedBuffer, RefusesNegativeAndOverflowingSizes) {
  EXPECT_THROW(AlignedBuffer(-1), InternalError);
  // A size beyond the memory budget comes from a plan or model: a user error, named.
  EXPECT_THROW(AlignedBuffer(std::numeric_limits<std::int64_t>::max()), Error);
  EXPECT_EQ(AlignedBuffer::round_up(0), 0);
  EXPECT_EQ(AlignedBuffer::round_up(1), 64);
  EXPECT_EQ(AlignedBuffer::round_up(128), 128);
  EXPECT_THROW(AlignedBuffer::round_up(std::numeric_limits<std::int64_t>::max() - 10),
               InternalError);
  EXPECT_EQ(checked_bytes(1000, 4), 4000);
  EXPECT_THROW(checked_bytes(std::numeric_limits<std::int64_t>::max() / 2, 4), InternalError);
  EXPECT_THROW(checked_bytes(-1, 4), InternalError);
}

TEST(ReusedPool, UsersShareOffsetsAndThePoolIsTheLargestUser) {
  ReusedPool pool;
  pool.begin_user();
  EXPECT_EQ(pool.take(10), 0);
  EXPECT_EQ(pool.take(100), 64);  // blocks are 64-byte aligned
  EXPECT_EQ(pool.peak(), 64 + 128);
  pool.begin_user();
  EXPECT_EQ(pool.take(64), 0);
  EXPECT_EQ(pool.peak(), 192);
  pool.begin_user();
  EXPECT_EQ(pool.take(500), 0);
  EXPECT_EQ(pool.peak(), 512);
  EXPECT_THROW(pool.at(0), InternalError);  // no memory before allocate()
  pool.allocate();
  EXPECT_TRUE(aligned64(pool.at(0)));
  EXPECT_TRUE(aligned64(pool.at(64)));
  EXPECT_THROW(pool.take(8), InternalError);  // laid out already
  EXPECT_THROW(pool.at(513), InternalError);
}

TEST(MemoryPlan, PlacesWeightsInputsArenaTensorsAndScratch) {
  const Graph g = make_graph({{"x", {2, 8}}}, {{"w", pattern({8, 4})}},
                             {{"MatMul", {"x", "w"}, {"m"}}, {"Relu", {"m"}, {"y"}}}, {"y"});
  const Plan plan = one_kernel_plan(g);
  MemoryPlan memory(g, plan);
  EXPECT_EQ(memory.locate("w").kind, Location::Kind::Constant);
  EXPECT_EQ(memory.locate("x").kind, Location::Kind::Input);
  EXPECT_EQ(memory.locate("y").kind, Location::Kind::Arena);
  EXPECT_FALSE(memory.locate_or_none("m"));  // internal to the kernel: not in the arena
  EXPECT_THROW(memory.locate("m"), Error);
  memory.begin_kernel();
  const Location m = memory.scratch_for("m");
  EXPECT_EQ(m.kind, Location::Kind::Scratch);
  EXPECT_EQ(memory.scratch_bytes(), 64);  // 2 x 4 floats, one line
  memory.allocate_pools();
  EXPECT_TRUE(aligned64(memory.mutable_address(m)));
  EXPECT_TRUE(aligned64(memory.mutable_address(memory.locate("y"))));
  EXPECT_THROW(memory.mutable_address(memory.locate("w")), InternalError);

  TensorMap inputs;
  EXPECT_THROW(memory.bind_inputs(inputs), Error);
  inputs["x"] = Tensor(DType::F32, {3, 8});
  EXPECT_THROW(memory.bind_inputs(inputs), Error);  // wrong shape
  inputs["x"] = Tensor(DType::F32, {2, 8});
  memory.bind_inputs(inputs);
  EXPECT_EQ(memory.address(memory.locate("x")), inputs["x"].raw());
}

}  // namespace
}  // namespace orchid
