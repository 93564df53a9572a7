// The plan picture's structure, checked on the DOT text: one cluster per kernel labelled
// with ops, predicted µs and ONNX origin; every kernel drawn exactly once (in its cluster
// or a collapsed run); every edge between boxes that exist; long chains collapsed.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <regex>
#include <set>
#include <string>

#include "cost/cost_model.hpp"
#include "orchestrate/orchestrator.hpp"
#include "orchestrate/plan_export.hpp"
#include "passes/load_model.hpp"
#include "test_config_roots.hpp"

namespace orchid {
namespace {

Orchestration orchestrated(const std::string& name) {
  const LoadedModel loaded = load_model(std::string(ORCHID_MODELS_DIR) + "/" + name + ".onnx");
  const auto model = make_analytic_cost_model(load_device_spec("a100", test::source_configs()));
  return orchestrate(loaded.graph, *model);
}

struct DotShape {
  std::set<std::string> nodes;                            // declared node ids
  std::set<std::size_t> cluster_kernels;                  // k of each cluster_k
  std::vector<std::pair<std::size_t, std::size_t>> runs;  // k-range of each collapsed run
  std::vector<std::pair<std::string, std::string>> edges;
  std::vector<std::string> cluster_labels;
};

DotShape shape_of(const std::string& dot) {
  DotShape s;
  const std::regex node(R"re(^\s+(\w+) \[)re");
  const std::regex cluster(R"re(subgraph cluster_k(\d+) \{)re");
  const std::regex label(R"re(^\s+label="(k\d+ .*)";$)re");
  const std::regex run(R"re(label="k(\d+)-k(\d+): )re");
  const std::regex edge(R"re(^\s+(\w+) -> (\w+);$)re");
  std::size_t at = 0;
  while (at < dot.size()) {
    const std::size_t end = dot.find('\n', at);
    const std::string line = dot.substr(at, end - at);
    at = end == std::string::npos ? dot.size() : end + 1;
    std::smatch m;
    if (std::regex_search(line, m, edge)) {
      s.edges.emplace_back(m[1], m[2]);
      continue;
    }
    if (std::regex_search(line, m, cluster)) s.cluster_kernels.insert(std::stoul(m[1]));
    if (std::regex_search(line, m, label)) s.cluster_labels.push_back(m[1]);
    if (std::regex_search(line, m, node) && m[1] != "node" && m[1] != "edge" && m[1] != "graph")
      s.nodes.insert(m[1]);
    if (std::regex_search(line, m, run)) s.runs.emplace_back(std::stoul(m[1]), std::stoul(m[2]));
  }
  return s;
}

void expect_every_kernel_once(const DotShape& s, std::size_t kernels) {
  std::vector<int> seen(kernels, 0);
  for (std::size_t k : s.cluster_kernels) ++seen[k];
  for (const auto& [a, b] : s.runs) {
    for (std::size_t k = a; k <= b; ++k) ++seen[k];
  }
  for (std::size_t k = 0; k < kernels; ++k) EXPECT_EQ(seen[k], 1) << "kernel " << k;
  for (const auto& [from, to] : s.edges) {
    EXPECT_TRUE(s.nodes.count(from)) << from;
    EXPECT_TRUE(s.nodes.count(to)) << to;
    EXPECT_NE(from, to);
  }
}

TEST(PlanDot, OneLabelledClusterPerKernel) {
  const Orchestration o = orchestrated("tiny_attention");
  const std::string dot = plan_to_dot(o, o.optimal, 1000);  // nothing collapsed
  const DotShape s = shape_of(dot);
  EXPECT_EQ(s.cluster_kernels.size(), o.optimal.kernels.size());
  EXPECT_TRUE(s.runs.empty());
  ASSERT_EQ(s.cluster_labels.size(), o.optimal.kernels.size());
  for (std::size_t k = 0; k < o.optimal.kernels.size(); ++k) {
    const std::string& text = s.cluster_labels[k];
    // "k3  12.34 us  MatMul, Add x2\n<ONNX node>"
    EXPECT_EQ(text.rfind(fmt::format("k{}  ", k), 0), 0u) << text;
    EXPECT_NE(text.find(fmt::format("{:.2f} us", o.optimal.kernels[k].cost_us)), std::string::npos)
        << text;
    const Node& first = o.fission.graph.nodes[o.optimal.kernels[k].nodes.front()];
    EXPECT_NE(text.find(first.op_type), std::string::npos) << text;
    const std::string origin = o.fission.origin.at(first.name);
    EXPECT_NE(text.find(origin.substr(origin.size() > 50 ? origin.size() - 50 : 0)),
              std::string::npos)
        << text << " / " << origin;
  }
  expect_every_kernel_once(s, o.optimal.kernels.size());
  EXPECT_GT(s.edges.size(), o.optimal.kernels.size() - 1);
}

TEST(PlanDot, LongChainsCollapse) {
  const Orchestration o = orchestrated("mobilenet_v2");
  const DotShape full = shape_of(plan_to_dot(o, o.optimal, 1000));
  const DotShape collapsed = shape_of(plan_to_dot(o, o.optimal, 4));
  // MobileNetV2's plan has runs of kernels each feeding only the next: they become boxes.
  EXPECT_FALSE(collapsed.runs.empty());
  for (const auto& [a, b] : collapsed.runs) EXPECT_GE(b - a + 1, 4u);
  EXPECT_LT(collapsed.nodes.size(), full.nodes.size() / 2);
  expect_every_kernel_once(collapsed, o.optimal.kernels.size());
  expect_every_kernel_once(full, o.optimal.kernels.size());
  // Inside kernels, chains of primitives are one box listing them in order.
  EXPECT_NE(plan_to_dot(o, o.per_primitive, 4).find("digraph plan"), std::string::npos);
}

}  // namespace
}  // namespace orchid
