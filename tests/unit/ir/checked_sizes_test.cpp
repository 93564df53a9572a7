// Sizes that come from input are checked before they are used: element and byte counts
// cannot wrap, allocations stay within the memory budget, .npy headers are parsed as
// the dict literal they are, and the mapping evaluator's knapsack takes absurd sizes.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <functional>

#include "ir/graph.hpp"
#include "ir/npy.hpp"
#include "ir/tensor.hpp"
#include "mapping/evaluator.hpp"
#include "util/checked_math.hpp"
#include "util/error.hpp"
#include "util/memory_budget.hpp"
#include "util/printable.hpp"

namespace orchid {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

constexpr std::int64_t kHuge = (std::int64_t{1} << 62) + 1;  // x 4 wraps to 4

TEST(CheckedSizes, ElementCountsDoNotWrap) {
  EXPECT_EQ(shape_numel({2, 3, 4}), 24);
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({0, 5}), 0);
  EXPECT_NE(error_of([] { shape_numel({kHuge, 4}); }).find("too many elements"), std::string::npos);
  // A zero dimension does not hide an overflowing stride.
  EXPECT_NE(error_of([] { shape_numel({0, kHuge, 16}); }), "");
  EXPECT_NE(error_of([] { checked_numel({-1, 4}, "t"); }).find("negative"), std::string::npos);
  EXPECT_EQ(checked_nbytes({kMaxElements}, 16, "t"), kMaxElements * 16);
  EXPECT_NE(error_of([] { checked_nbytes({kMaxElements + 1}, 1, "t"); }), "");
}

TEST(CheckedSizes, TensorsAndGraphShapesRespectTheBudget) {
  EXPECT_NE(error_of([] {
              Tensor(DType::F32, {kHuge, 4});
            }).find("too many elements"),
            std::string::npos);
  set_memory_budget(1 << 20);
  const std::string big = error_of([] { Tensor(DType::F32, {1024, 1024}); });
  Graph g;
  const std::string inferred = error_of([&] {
    g.set_type("activation", DType::F32, {1 << 20, 8});
  });
  set_memory_budget(0);
  EXPECT_NE(big.find("memory budget"), std::string::npos) << big;
  EXPECT_NE(inferred.find("'activation'"), std::string::npos) << inferred;
  EXPECT_NE(inferred.find("memory budget"), std::string::npos) << inferred;
  EXPECT_EQ(memory_budget(), physical_memory_bytes());
  EXPECT_NO_THROW(Tensor(DType::F32, {1024, 1024}));
}

TEST(CheckedSizes, IntegersParseWholeAndInRange) {
  EXPECT_EQ(parse_int64("42", 0, 100), 42);
  EXPECT_EQ(parse_int64("-3", -5, 5), -3);
  for (const char* bad : {"", " 4", "+4", "4x", "4.5", "1e3", "99999999999999999999", "0x10"}) {
    EXPECT_FALSE(parse_int64(bad, INT64_MIN, INT64_MAX)) << bad;
  }
  EXPECT_FALSE(parse_int64("101", 0, 100));
  EXPECT_EQ(mul_no_overflow(INT64_MAX, 2), std::nullopt);
  EXPECT_EQ(add_no_overflow(INT64_MAX, 1), std::nullopt);
}

TEST(CheckedSizes, KnapsackTakesAbsurdSizes) {
  const std::vector<double> sizes = {1e300, NAN, INFINITY, 10, -5, 20};
  const std::vector<bool> take = mapping::knapsack_fill(sizes, 25, 1024);
  EXPECT_EQ(take, (std::vector<bool>{false, false, false, false, false, true}));
  EXPECT_EQ(mapping::knapsack_fill({5, 6}, NAN, 1024), (std::vector<bool>{false, false}));
}

// .npy files built by hand: magic, version 1.0, header length, header, data.
std::string npy_bytes(const std::string& header, std::size_t data_bytes) {
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + std::string(data_bytes, '\0');
}

TEST(CheckedSizes, NpyHeaderIsParsedNotSearched) {
  const auto good = parse_npy(
      npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }   \n", 24), "a.npy");
  EXPECT_EQ(good.shape(), (Shape{2, 3}));
  EXPECT_EQ(
      parse_npy(npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (3,)}", 24), "b.npy")
          .shape(),
      Shape{3});
  EXPECT_EQ(
      parse_npy(npy_bytes("{'shape': (), 'descr': '|u1', 'fortran_order': False}", 1), "c").shape(),
      Shape{});
  struct Case {
    const char* header;
    const char* expect;
  };
  for (const Case& c : {
           Case{"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 3), }", "True or False"},
           Case{"{'descr': '<f4', 'fortran_order': False, 'shape': (4.5, 16), }", "dimension"},
           Case{"{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 16), }", "dimension"},
           Case{"{'descr': '<f4', 'fortran_order': False, 'shape': (3), }", "(n,)"},
           Case{"{'descr': '<f4', 'fortran_order': False}", "needs the keys"},
           Case{"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}",
                "repeated"},
           Case{"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", "'x'"},
           Case{"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} trailing", "after"},
           Case{"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
                "dimension"},
       }) {
    const std::string msg = error_of([&] { parse_npy(npy_bytes(c.header, 64), "bad.npy"); });
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.header << " -> " << msg;
    EXPECT_NE(msg.find("bad.npy"), std::string::npos) << msg;
  }
  // A header declaring far more data than the file holds: refused before allocating.
  const std::string huge = error_of([] {
    parse_npy(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1048576, 1048576)}", 8),
              "huge.npy");
  });
  EXPECT_NE(huge.find("truncated"), std::string::npos) << huge;
  const std::string wraps = error_of([] {
    parse_npy(
        npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387905, 4)}",
                  16),
        "wrap.npy");
  });
  EXPECT_NE(wraps.find("too many elements"), std::string::npos) << wraps;
}

TEST(CheckedSizes, NpyReaderRefusesWhatIsNotARegularFile) {
  for (const char* path : {"/dev/zero", "/tmp"}) {
    const std::string msg = error_of([&] { read_npy(path); });
    EXPECT_NE(msg.find("only regular files"), std::string::npos) << path << ": " << msg;
  }
}

TEST(CheckedSizes, PrintableEscapesControlCharacters) {
  EXPECT_EQ(printable("plain name/Add:0"), "plain name/Add:0");
  EXPECT_EQ(printable("a\x1b[2Jb\n"), "a\\x1b[2Jb\\n");
  EXPECT_EQ(printable("caf\xc3\xa9"), "caf\xc3\xa9");       // UTF-8 stays
  EXPECT_EQ(printable("\xff\xc2\x9b"), "\\xff\\xc2\\x9b");  // invalid byte, C1 control
}

}  // namespace
}  // namespace orchid
