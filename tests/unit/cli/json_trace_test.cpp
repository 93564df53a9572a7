// `inspect --json`, `run --json`, `run --trace` and `map --trace`: the documents parse and
// hold what docs/json_output.md promises.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.hpp"

namespace fs = std::filesystem;

namespace orchid {
namespace {

using cli_testing::Result;
using cli_testing::run_cli;
const auto& model_file = cli_testing::model;

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

fs::path scratch_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("orchid_json_trace_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Complete ("X") events by category.
std::map<std::string, std::vector<nlohmann::json>> spans_by_category(const nlohmann::json& trace) {
  std::map<std::string, std::vector<nlohmann::json>> out;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "X") out[e.at("cat").get<std::string>()].push_back(e);
  }
  return out;
}

TEST(CliJson, InspectToStdoutIsOneDocument) {
  const Result r = run_cli("inspect " + model_file("tiny_mlp") + " --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);  // nothing but the JSON on stdout
  EXPECT_EQ(j.at("inputs").at(0).at("name"), "x");
  EXPECT_EQ(j.at("inputs").at(0).at("shape"), nlohmann::json({4, 16}));
  EXPECT_EQ(j.at("op_histogram").at("MatMul"), 2);
  EXPECT_EQ(j.at("nodes"), 6);
  EXPECT_GT(j.at("flops").get<long>(), 0);
}

TEST(CliJson, InspectToFileKeepsTheTextReport) {
  const fs::path dir = scratch_dir("inspect");
  const Result r =
      run_cli("inspect " + model_file("tiny_conv") + " --json " + (dir / "m.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("op histogram"), std::string::npos);
  EXPECT_EQ(read_json(dir / "m.json").at("model"), model_file("tiny_conv"));
  fs::remove_all(dir);
}

TEST(CliJson, RunReportAndKernelTrace) {
  const fs::path dir = scratch_dir("run");
  const Result r = run_cli("run " + model_file("tiny_conv") + " --device cpu --repeat 3 --json " +
                           (dir / "r.json").string() + " --trace " + (dir / "t.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto report = read_json(dir / "r.json");
  EXPECT_EQ(report.at("device"), "cpu");
  EXPECT_EQ(report.at("outputs").at(0).at("name"), "logits");
  EXPECT_EQ(report.at("time_ms").at("runs"), 3);
  EXPECT_EQ(report.at("time_ms").at("each").size(), 3u);
  const auto& memory = report.at("memory_bytes");
  EXPECT_EQ(memory.at("peak").get<long>(),
            memory.at("arena").get<long>() + memory.at("scratch").get<long>() +
                memory.at("loop_buffers").get<long>() + memory.at("weights").get<long>() +
                memory.at("packed_weights").get<long>() + memory.at("blocked_layouts").get<long>());
  // The convolution weights are read only packed: their originals are not kept.
  EXPECT_GT(memory.at("released_weights").get<long>(), 0);
  const std::size_t kernels = report.at("plan").at("kernels").get<std::size_t>();
  EXPECT_EQ(report.at("kernel_times").at("kernels").size(), kernels);

  // One span per plan kernel, back to back, on one named track.
  const auto trace = read_json(dir / "t.json");
  const auto spans = spans_by_category(trace).at("kernel");
  ASSERT_EQ(spans.size(), kernels);
  double end = 0;
  for (std::size_t k = 0; k < spans.size(); ++k) {
    EXPECT_EQ(spans[k].at("args").at("kernel"), k);
    EXPECT_NEAR(spans[k].at("ts").get<double>(), end, 1e-6);
    end += spans[k].at("dur").get<double>();
  }
  bool named = false;
  for (const auto& e : trace.at("traceEvents")) {
    named |= e.at("ph") == "M" && e.at("name") == "thread_name";
  }
  EXPECT_TRUE(named);
  fs::remove_all(dir);
}

TEST(CliJson, RunJsonToStdoutAndMisuse) {
  Result r = run_cli("run " + model_file("tiny_mlp") + " --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("device"), "reference");
  r = run_cli("run " + model_file("tiny_mlp") + " --trace /tmp/never_written_trace.json");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--trace records the plan's kernels"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists("/tmp/never_written_trace.json"));
}

TEST(CliJson, MapTraceHasComputeOnDevicesAndTransfers) {
  const fs::path dir = scratch_dir("map");
  const std::string configs = std::string(ORCHID_SOURCE_DIR) + "/configs";
  const Result r = run_cli("map h2h_example --system " + configs +
                           "/systems/h2h_example.toml --generations 5 --quiet --json " +
                           (dir / "m.json").string() + " --trace " + (dir / "t.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto plan = read_json(dir / "m.json");
  const auto trace = read_json(dir / "t.json");
  const auto spans = spans_by_category(trace);
  ASSERT_TRUE(spans.count("compute"));
  ASSERT_TRUE(spans.count("transfer"));
  // Every layer computes somewhere, and nothing ends after the makespan.
  std::set<int> layers;
  double last_end = 0;
  for (const auto& [category, list] : spans) {
    for (const auto& e : list) {
      if (category == "compute") layers.insert(e.at("args").at("layer").get<int>());
      last_end = std::max(last_end, e.at("ts").get<double>() + e.at("dur").get<double>());
    }
  }
  const double latency_ms = trace.at("otherData").at("latency_ms").get<double>();
  EXPECT_LE(last_end, latency_ms * 1e3 * (1 + 1e-9));
  EXPECT_GT(layers.size(), 1u);
  EXPECT_GT(latency_ms, 0);
  // The trace draws the evaluator's own transfers between groups, those the plan lists.
  std::size_t between_groups = 0;
  for (const auto& t : plan.at("transfers")) {
    between_groups += t.at("end_s").get<double>() > t.at("start_s").get<double>();
  }
  std::size_t drawn = 0;
  for (const auto& e : spans.at("transfer")) {
    const std::string name = e.at("name");
    drawn += name.find(" -> ") != std::string::npos;
  }
  EXPECT_EQ(drawn, between_groups);
  EXPECT_EQ(plan.at("costing").at("gpu"), "none");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace orchid
