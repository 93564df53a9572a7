// What the graph-rewrite tests share: counting ops, and comparing a rewritten graph's
// outputs with the original's on the reference interpreter.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <string>

#include "eval/random_inputs.hpp"
#include "eval/reference_interpreter.hpp"
#include "ir/graph.hpp"

namespace orchid::pass_test {

inline std::size_t count_op(const Graph& g, const std::string& op) {
  std::size_t n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op;
  return n;
}

// Every output of `rewritten` within |new - old| <= atol + rtol |old| of `original`'s, on
// the same random inputs (atol = rtol = 0: bit for bit).
inline void expect_same_outputs(const Graph& original, const Graph& rewritten, double atol,
                                double rtol, std::uint64_t seed = 0) {
  const TensorMap feed = make_random_inputs(original, seed);
  const TensorMap want = ReferenceInterpreter(original).run(feed);
  const TensorMap have = ReferenceInterpreter(rewritten).run(feed);
  for (const auto& [name, w] : want) {
    const Tensor& h = have.at(name);
    ASSERT_EQ(h.shape(), w.shape()) << name;
    std::int64_t bad = 0;
    for (std::int64_t i = 0; i < w.numel(); ++i) {
      const double a = h.get_as_double(i), b = w.get_as_double(i);
      if (!(std::fabs(a - b) <= atol + rtol * std::fabs(b)) && bad++ < 3) {
        ADD_FAILURE() << name << "[" << i << "]: " << a << " vs " << b;
      }
    }
    EXPECT_EQ(bad, 0) << name;
  }
}

}  // namespace orchid::pass_test
