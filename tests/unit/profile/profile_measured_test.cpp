// Measured costs: the kernel timer runs candidate kernels through the plan executor; the
// measured cost model reuses a warm database (no re-timing, identical plan); Spearman
// on known vectors; calibration recovers known parameters from synthetic measurements;
// calibrated device files round-trip; the CLI contract. No assertion depends on how
// fast anything runs.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "cost/analytic_cost_model.hpp"
#include "cost/device_spec_toml.hpp"
#include "cost/kernel_signature.hpp"
#include "ir/op_registry.hpp"
#include "orchestrate/candidates.hpp"
#include "orchestrate/orchestrator.hpp"
#include "passes/load_model.hpp"
#include "profile/calibration.hpp"
#include "profile/kernel_timer.hpp"
#include "profile/measured_cost_model.hpp"
#include "test_config_roots.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/statistics.hpp"

namespace fs = std::filesystem;

namespace orchid {
namespace {

std::string model_path(const std::string& name) {
  return std::string(ORCHID_MODELS_DIR) + "/" + name + ".onnx";
}

fs::path temp_dir(const std::string& tag) {
  const fs::path d =
      fs::temp_directory_path() / ("orchid_profile_test_" + std::to_string(::getpid()) + "_" + tag);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Quick timer settings: the tests check plumbing, not speed.
MeasuredCostOptions quick_options(const std::string& db) {
  MeasuredCostOptions o;
  o.db_path = db;
  o.progress = false;
  o.timer.min_reps = 3;
  o.timer.max_reps = 5;
  o.timer.target_seconds = 0.001;
  // These tests check reuse and determinism, not noise: on a loaded machine a short
  // timing may spread widely, and it must still be stored here.
  o.max_stored_spread = std::numeric_limits<double>::infinity();
  return o;
}

// Every candidate kernel (and the graph they index) of a zoo model, as orchestrate sees
// them: fission, topological order, candidates of the whole graph. Held by pointer: the
// views point into the graph.
struct Candidates {
  FissionResult fission;
  std::unique_ptr<PrimitiveGraphIndex> index;
  std::vector<KernelView> views;
};
std::unique_ptr<Candidates> candidates_of(const std::string& name) {
  auto owner = std::make_unique<Candidates>();
  Candidates& c = *owner;
  const LoadedModel loaded = load_model(model_path(name));
  c.fission = fission(loaded.graph, FissionOptions{});
  c.fission.graph.sort_topologically();
  std::set<std::string> exported;
  for (const auto& [alt, target] : c.fission.alternatives) exported.insert(alt);
  c.index = std::make_unique<PrimitiveGraphIndex>(c.fission.graph, exported);
  std::vector<std::size_t> all(c.fission.graph.nodes.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  for (const auto& k : enumerate_candidates(*c.index, all, CandidateRules{})) {
    c.views.push_back(c.index->view(k));
  }
  return owner;
}

TEST(ProfileTimer, TimesACandidateKernelThroughThePlanExecutor) {
  const auto owner = candidates_of("tiny_mlp");
  const Candidates& c = *owner;
  ASSERT_FALSE(c.views.empty());
  const KernelView& biggest = *std::max_element(
      c.views.begin(), c.views.end(),
      [](const KernelView& a, const KernelView& b) { return a.nodes.size() < b.nodes.size(); });
  const Graph g = kernel_graph(biggest);
  EXPECT_EQ(g.nodes.size(), biggest.nodes.size());
  EXPECT_EQ(g.outputs, biggest.outputs);
  for (const auto& in : g.inputs) EXPECT_FALSE(g.is_constant(in));
  KernelTimerOptions o;
  o.min_reps = 3;
  o.max_reps = 4;
  o.target_seconds = 0.0;
  const KernelTiming t = time_kernel(biggest, o);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.reps, 3);
  EXPECT_GT(t.median_us, 0);
  EXPECT_LE(t.p10_us, t.median_us);
  EXPECT_LE(t.median_us, t.p90_us);
}

TEST(ProfileTimer, ReportsWhatItCannotTime) {
  KernelView none;
  const KernelTiming t = time_kernel(none);
  EXPECT_FALSE(t.ok);
  EXPECT_FALSE(t.error.empty());
}

struct PlanSummary {
  std::vector<std::vector<std::size_t>> kernels;
  double total_us = 0;
  bool operator==(const PlanSummary&) const = default;
};
PlanSummary summary(const Plan& p) {
  PlanSummary s;
  for (const auto& k : p.kernels) s.kernels.push_back(k.nodes);
  s.total_us = p.total_us;
  return s;
}

class ProfileMeasured : public ::testing::TestWithParam<const char*> {};

TEST_P(ProfileMeasured, WarmDatabaseGivesTheSamePlanWithoutTiming) {
  const fs::path dir = temp_dir(std::string("warm_") + GetParam());
  const std::string db = (dir / "profile-cpu.json").string();
  const LoadedModel loaded = load_model(model_path(GetParam()));
  const DeviceSpec cpu = load_device_spec("cpu", test::source_configs());

  PlanSummary first[4];
  std::size_t kernels = 0;
  {
    const MeasuredCostModel cold(cpu, quick_options(db));
    const Orchestration o = orchestrate(loaded.graph, cold, OrchestrateOptions{});
    const MeasuredCostStats& s = cold.stats();
    EXPECT_GT(s.timed, 0u);
    EXPECT_EQ(s.reused, 0u);
    EXPECT_EQ(s.fell_back, 0u) << (s.fallback_examples.empty() ? "" : s.fallback_examples[0]);
    EXPECT_EQ(s.timed + s.reused + s.fell_back, s.kernels);
    EXPECT_TRUE(fs::exists(db));
    EXPECT_EQ(cold.database().size(), s.kernels);
    kernels = s.kernels;
    first[0] = summary(o.optimal);
    first[1] = summary(o.greedy);
    first[2] = summary(o.operator_level);
    first[3] = summary(o.per_primitive);
    // Plans are costed by measurements: every plan's total is a sum of stored medians.
    for (const Plan* p : {&o.optimal, &o.greedy, &o.operator_level, &o.per_primitive}) {
      EXPECT_LE(o.optimal.total_us, p->total_us + 1e-9);
    }
    EXPECT_GE(s.calibration.kernels, 1u);
  }
  const MeasuredCostModel warm(cpu, quick_options(db));
  const Orchestration o = orchestrate(loaded.graph, warm, OrchestrateOptions{});
  EXPECT_EQ(warm.stats().timed, 0u);
  EXPECT_EQ(warm.stats().reused, kernels);
  EXPECT_EQ(warm.stats().kernels, kernels);
  EXPECT_EQ(summary(o.optimal), first[0]);
  EXPECT_EQ(summary(o.greedy), first[1]);
  EXPECT_EQ(summary(o.operator_level), first[2]);
  EXPECT_EQ(summary(o.per_primitive), first[3]);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(ProfileTinyModels, ProfileMeasured,
                         ::testing::Values("tiny_mlp", "tiny_attention"));

TEST(ProfileMeasuredModel, RefusesGpuDevices) {
  const fs::path dir = temp_dir("gpu");
  const DeviceSpec gpu = load_device_spec("a100", test::source_configs());
  const MeasuredCostOptions options = quick_options((dir / "db.json").string());
  EXPECT_THROW({ MeasuredCostModel model(gpu, options); }, Error);
  fs::remove_all(dir);
}

TEST(ProfileMeasuredModel, FailedKernelsFallBackAndAreRemembered) {
  const fs::path dir = temp_dir("failed");
  const std::string db_path = (dir / "db.json").string();
  const auto owner = candidates_of("tiny_mlp");
  const Candidates& c = *owner;
  const DeviceSpec cpu = load_device_spec("cpu", test::source_configs());
  const std::uint64_t s0 = kernel_signature(c.views[0], cpu.name);
  {
    ProfileDb db(db_path, cpu.name);
    ProfileEntry failed;
    failed.error = "could not run";
    failed.timer_version = kKernelTimerVersion;
    failed.kernel = kernel_summary(c.views[0]);
    db.put(s0, failed);
    db.save();
  }
  MeasuredCostOptions o = quick_options(db_path);
  o.calibrated_fallback = false;
  const MeasuredCostModel m(cpu, o);
  EXPECT_EQ(m.latency_us(c.views[0]), analytic_kernel_cost(c.views[0], cpu).total_us);
  EXPECT_EQ(m.stats().fell_back, 1u);
  EXPECT_EQ(m.stats().timed, 0u);
  ASSERT_EQ(m.stats().fallback_examples.size(), 1u);
  EXPECT_NE(m.stats().fallback_examples[0].find("could not run"), std::string::npos);
  fs::remove_all(dir);
}

TEST(ProfileStatistics, SpearmanOnKnownVectors) {
  EXPECT_DOUBLE_EQ(spearman_rank_correlation({1, 2, 3, 4, 5}, {10, 20, 30, 40, 50}), 1.0);
  EXPECT_DOUBLE_EQ(spearman_rank_correlation({1, 2, 3, 4, 5}, {5, 4, 3, 2, 1}), -1.0);
  // Without ties: 1 - 6 sum d^2 / (n (n^2 - 1)); ranks b = 2,1,4,3,5 -> sum d^2 = 4.
  EXPECT_NEAR(spearman_rank_correlation({1, 2, 3, 4, 5}, {2, 1, 4, 3, 5}), 1 - 6.0 * 4 / 120,
              1e-12);
  // Ties get average ranks: b ranks 1, 2.5, 2.5, 4 -> Pearson of (1,2,3,4) and those.
  EXPECT_NEAR(spearman_rank_correlation({1, 2, 3, 4}, {1, 7, 7, 9}), 0.9486832980505138, 1e-12);
  EXPECT_TRUE(std::isnan(spearman_rank_correlation({1, 2, 3}, {4, 4, 4})));
  EXPECT_TRUE(std::isnan(spearman_rank_correlation({1}, {2})));
  EXPECT_EQ(average_ranks({3, 1, 3}), (std::vector<double>{2.5, 1, 2.5}));
  EXPECT_DOUBLE_EQ(median({5, 1, 3}), 3);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(percentile_of_sorted({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0.9), 10);
}

TEST(ProfileCalibration, RecoversKnownParametersFromSyntheticMeasurements) {
  // Kernels of three small models: memory-bound, GEMM-bound, and tiny (launch-bound).
  std::vector<std::unique_ptr<Candidates>> models;
  std::vector<KernelView> views;
  for (const char* name : {"tiny_mlp", "tiny_attention", "tiny_conv"}) {
    models.push_back(candidates_of(name));
    views.insert(views.end(), models.back()->views.begin(), models.back()->views.end());
  }
  // Plus large GEMMs, which are compute bound, so gemm_efficiency matters.
  Graph gemms;
  for (std::int64_t n : {256, 384, 512, 640}) {
    const std::string x = "x" + std::to_string(n), w = "w" + std::to_string(n);
    gemms.set_type(x, DType::F32, {n, n});
    gemms.inputs.push_back(x);
    gemms.set_constant(w, Tensor(DType::F32, {n, n}));
    Node node;
    node.name = "mm" + std::to_string(n);
    node.op_type = "MatMul";
    node.inputs = {x, w};
    node.outputs = {"y" + std::to_string(n)};
    gemms.nodes.push_back(node);
    gemms.outputs.push_back(node.outputs[0]);
  }
  infer_shapes(gemms);
  for (std::size_t i = 0; i < gemms.nodes.size(); ++i) {
    views.push_back(make_kernel_view(gemms, {i}));
  }
  const DeviceSpec base = load_device_spec("cpu", test::source_configs());
  DeviceSpec truth = base;
  truth.launch_overhead_us = 7.5;
  truth.dram_bandwidth_gbs = 6.0;
  truth.curves.vector_efficiency = 0.2;
  truth.curves.gemm_efficiency = 0.8;  // tiled GEMM beats direct code (0.3)
  const std::vector<double> measured = analytic_predictions(truth, views);
  const CalibrationResult r = calibrate_device(base, views, measured);
  ASSERT_TRUE(r.ok) << r.note;
  EXPECT_LT(r.rms_log_error_after, 1e-3);
  EXPECT_GT(r.rms_log_error_before, 0.1);
  EXPECT_NEAR(r.device.launch_overhead_us, 7.5, 7.5 * 0.01);
  EXPECT_NEAR(r.device.dram_bandwidth_gbs, 6.0, 6.0 * 0.01);
  EXPECT_NEAR(r.device.curves.gemm_efficiency, 0.8, 0.8 * 0.01);
  EXPECT_GT(r.spearman_after, 0.999);
  ASSERT_EQ(r.parameters.size(), 6u);
  EXPECT_EQ(r.parameters[0].key, "launch_overhead_us");
  EXPECT_TRUE(r.parameters[0].fitted);
  EXPECT_EQ(r.parameters[0].before, base.launch_overhead_us);
  EXPECT_NEAR(r.parameters[0].after, 7.5, 0.075);
  // No kernel here is bound by vector math: that parameter has nothing to fit, stays.
  for (const auto& p : r.parameters) {
    if (!p.fitted) {
      EXPECT_EQ(p.before, p.after) << p.key;
    }
  }
  // Too few kernels: no fit, the base spec back.
  const CalibrationResult few = calibrate_device(base, {views.begin(), views.begin() + 3},
                                                 {measured.begin(), measured.begin() + 3});
  EXPECT_FALSE(few.ok);
  EXPECT_EQ(few.device.dram_bandwidth_gbs, base.dram_bandwidth_gbs);
}

TEST(ProfileCalibration, DeviceTomlRoundTrips) {
  const fs::path dir = temp_dir("toml");
  DeviceSpec spec = load_device_spec("cpu", test::source_configs());
  spec.launch_overhead_us = 3.0 / 7.0;
  spec.dram_bandwidth_gbs = 12.345678901234;
  spec.curves.vector_efficiency = 0.123456789;
  spec.description = "CPU \"quoted\" \\ (calibrated)";
  const std::string path = (dir / "cpu_calibrated.toml").string();
  write_file_atomically(path, device_spec_to_toml(spec, "Calibrated for a test.\nSecond line."));
  const DeviceSpec back = load_device_spec(path, test::source_configs());
  EXPECT_EQ(back.name, spec.name);
  EXPECT_EQ(back.description, spec.description);
  EXPECT_EQ(back.launch_overhead_us, spec.launch_overhead_us);
  EXPECT_EQ(back.dram_bandwidth_gbs, spec.dram_bandwidth_gbs);
  EXPECT_EQ(back.curves.vector_efficiency, spec.curves.vector_efficiency);
  EXPECT_EQ(back.curves.gemm_tiles.size(), spec.curves.gemm_tiles.size());
  EXPECT_EQ(back.curves.gemm_max_split_k, spec.curves.gemm_max_split_k);
  EXPECT_EQ(device_spec_to_toml(back), device_spec_to_toml(spec));
  fs::remove_all(dir);
}

// The orchid binary: --profile contract for benchmarks.
struct CliResult {
  int code = 0;
  std::string out;
  std::string err;
};
CliResult run_cli(const std::string& args, const fs::path& dir) {
  const fs::path err_file = dir / "stderr.txt";
  const std::string cmd = std::string(ORCHID_BINARY) + " " + args + " 2>" + err_file.string();
  CliResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), pipe)) r.out += buf.data();
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream f(err_file);
  r.err.assign(std::istreambuf_iterator<char>(f), {});
  return r;
}

TEST(ProfileCli, OrchestrateProfileWritesThePlanKindAndCalibrationThatRunExecutes) {
  const fs::path dir = temp_dir("cli");
  const std::string db = (dir / "db.json").string();
  const std::string plan = (dir / "plan.json").string();
  const std::string toml = (dir / "cpu_calibrated.toml").string();
  const CliResult r =
      run_cli("orchestrate " + model_path("tiny_mlp") + " --device cpu --profile --profile-db " +
                  db + " --plan-kind greedy-fusion --json " + plan + " --calibrate-out " + toml,
              dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("timed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Spearman"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("profiling"), std::string::npos) << r.err;  // progress lines
  // Refined by timing plans whole: the in-context database lies beside the profile one.
  EXPECT_NE(r.out.find("in context"), std::string::npos) << r.out;
  bool context_db = false;
  for (const auto& f : fs::directory_iterator(dir)) {
    context_db = context_db || f.path().filename().string().rfind("context-cpu-", 0) == 0;
  }
  EXPECT_TRUE(context_db);
  std::ifstream in(plan);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j.at("kind"), "greedy-fusion");
  EXPECT_NO_THROW(load_device_spec(toml, test::source_configs()));

  const CliResult again = run_cli(
      "orchestrate " + model_path("tiny_mlp") + " --device cpu --profile --profile-db " + db, dir);
  ASSERT_EQ(again.code, 0) << again.err;
  // Every kernel stored by the first run is reused; only those too noisy to store (another
  // test loading the machine) are timed again.
  const auto count_before = [](const std::string& out, const std::string& what) {
    const std::size_t at = out.find(what);
    if (at == std::string::npos) return 0;
    const std::size_t start = out.find_last_of(" :", at - 2) + 1;
    return std::stoi(out.substr(start, at - start));
  };
  EXPECT_EQ(count_before(again.out, " timed,"), count_before(r.out, " kernel(s) too noisy"))
      << r.out << again.out;

  const CliResult run =
      run_cli("run " + model_path("tiny_mlp") + " --plan " + plan + " --repeat 2", dir);
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("greedy-fusion plan"), std::string::npos) << run.out;

  const CliResult run_profiled =
      run_cli("run " + model_path("tiny_mlp") + " --device cpu --profile --profile-db " + db, dir);
  ASSERT_EQ(run_profiled.code, 0) << run_profiled.err;
  EXPECT_NE(run_profiled.out.find("measured"), std::string::npos) << run_profiled.out;
  fs::remove_all(dir);
}

TEST(ProfileCli, ClearErrors) {
  const fs::path dir = temp_dir("cli_errors");
  const std::string m = model_path("tiny_mlp");
  CliResult r = run_cli(
      "orchestrate " + m + " --device a100 --profile --profile-db " + (dir / "db.json").string(),
      dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--device cpu"), std::string::npos) << r.err;
  r = run_cli("orchestrate " + m + " --device cpu --calibrate-out " + (dir / "x.toml").string(),
              dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--calibrate-out needs --profile"), std::string::npos) << r.err;
  r = run_cli("orchestrate " + m + " --device cpu --plan-kind fastest", dir);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("plan-kind"), std::string::npos) << r.err;
  const std::string bad = (dir / "bad.json").string();
  std::ofstream(bad) << "{ not json";
  r = run_cli("orchestrate " + m + " --device cpu --profile --profile-db " + bad, dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace orchid
