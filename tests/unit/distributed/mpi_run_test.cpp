// Mapping plans executed under mpirun (2 and 4 ranks, --oversubscribe): every output
// equals the single-process reference interpreter (`orchid run --mapping ... --check`:
// |d| <= 1e-4 + 1e-3 |ref|; bit-identical except after in-channel sums), every sharding
// strategy forced on a one-group plan (really split where the runner can: the timeline
// says so), two runs give the same bytes, MobileNetV2 in the default suite and the big
// zoo models in the long one, and a plan for another world size or model fails on every
// rank without hanging.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;

struct Result {
  int status = 0;
  std::string output;
};

Result sh(const std::string& command) {
  Result r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) r.output.append(buffer, n);
  r.status = pclose(pipe);
  return r;
}

// Sanitizer builds: the ranks' leak check ignores Open MPI's own allocations, which need
// full stack unwinding to be recognised (the MPI libraries have no frame pointers).
#if defined(__SANITIZE_ADDRESS__)
const std::string kLeakOptions = std::string("LSAN_OPTIONS=suppressions=") + ORCHID_SOURCE_DIR +
                                 "/tests/lsan.supp:fast_unwind_on_malloc=0 ";
#else
const std::string kLeakOptions;
#endif

std::string mpirun(int ranks) {
  return kLeakOptions +
         "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
         "OMPI_MCA_rmaps_base_oversubscribe=1 " +
         ORCHID_MPIEXEC + " -n " + std::to_string(ranks) + " --oversubscribe ";
}

const std::string kOrchid = ORCHID_BINARY;
const std::string kModels = ORCHID_MODELS_DIR;
const std::string kSystems = std::string(ORCHID_SOURCE_DIR) + "/configs/systems/";

fs::path scratch(const std::string& name) {
  // Per process: other worktrees run these tests at the same time.
  const fs::path dir =
      fs::temp_directory_path() / ("orchid_mpi_" + name + "_" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir;
}

nlohmann::json read_json(const fs::path& path) {
  nlohmann::json j;
  std::ifstream(path) >> j;
  return j;
}

// `orchid map` on a CPU cluster, then the plan's layers rewritten to one group of
// `ranks` ranks and sharding `strategy` ("" keeps the GA's plan).
std::string plan_for(const std::string& model, const std::string& system, int batch,
                     const std::string& strategy, int ranks, const fs::path& dir) {
  const std::string json = (dir / (model + "_" + system + ".json")).string();
  const Result map = sh(kOrchid + " map " + kModels + "/" + model + ".onnx --system " + kSystems +
                        system + ".toml --batch " + std::to_string(batch) +
                        " --quiet --generations 5 --time-limit 20 --json " + json);
  EXPECT_EQ(map.status, 0) << map.output;
  if (strategy.empty()) return json;
  nlohmann::json j = read_json(json);
  j["groups"] =
      nlohmann::json::array({{{"design", "cpu"}, {"devices", ranks}, {"first_device", 0}}});
  for (auto& l : j["layers"]) {
    l["group"] = 0;
    l["sharding"] = strategy;
  }
  const std::string forced = (dir / (model + "_" + strategy.substr(0, 5) + ".json")).string();
  std::ofstream(forced) << j.dump();
  return forced;
}

Result run_plan(const std::string& model, const std::string& plan, int ranks,
                const std::string& extra = "", int timeout_s = 60) {
  return sh(mpirun(ranks) + kOrchid + " run " + kModels + "/" + model + ".onnx --mapping " + plan +
            " --check --timeout " + std::to_string(timeout_s) + " " + extra);
}

std::string read_bytes(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

// Every output file of two --save-outputs directories, byte for byte.
void expect_same_files(const fs::path& a, const fs::path& b) {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(a)) {
    EXPECT_EQ(read_bytes(entry.path()), read_bytes(b / entry.path().filename())) << entry.path();
    ++files;
  }
  EXPECT_GT(files, 0) << a;
}

// Runs `plan` (outputs checked against the reference) writing its timeline into `dir`;
// the timeline's measured events when the run succeeded, none otherwise.
struct TimedRun {
  Result result;
  nlohmann::json events = nlohmann::json::array();
};
TimedRun run_with_timeline(const std::string& model, const std::string& plan, int ranks,
                           const fs::path& dir, const std::string& extra = "") {
  const fs::path timeline = dir / "timeline.json";
  TimedRun run{run_plan(model, plan, ranks, extra + " --timeline " + timeline.string())};
  if (run.result.status == 0) run.events = read_json(timeline)["measured"];
  return run;
}

// How the timeline says layers ran ("out-ch", "batch", "none (planned spatial)"...).
std::set<std::string> computed_as(const fs::path& timeline) {
  nlohmann::json t = read_json(timeline);
  std::set<std::string> how;
  for (const auto& e : t["measured"]) {
    if (e["kind"] == "compute") how.insert(e["how"].get<std::string>());
  }
  return how;
}

class EveryStrategy : public ::testing::TestWithParam<const char*> {};

// Each strategy forced on every layer of one group: the outputs match the reference,
// the convolutions and fully connected layers really run split (the timeline names the
// strategy), and a second run at 4 ranks gives the same bytes.
TEST_P(EveryStrategy, TinyModelsMatchTheReferenceOnTwoAndFourRanks) {
  const std::string strategy = GetParam();
  // One folder per strategy: ctest runs the strategies in parallel.
  std::string folder = "strategy_" + strategy;
  std::replace(folder.begin(), folder.end(), '/', '_');
  const fs::path dir = scratch(folder);
  for (int ranks : {2, 4}) {
    for (const char* model : {"tiny_conv", "tiny_mlp", "tiny_attention"}) {
      if (ranks == 4 && std::string(model) == "tiny_mlp") continue;  // keeps the suite short
      const std::string system = "cpu" + std::to_string(ranks);
      const std::string plan = plan_for(model, system, 4, strategy, ranks, dir);
      const fs::path a = dir / (std::string(model) + system + "a");
      const fs::path timeline = dir / (std::string(model) + system + ".json");
      const Result r = run_plan(
          model, plan, ranks, "--save-outputs " + a.string() + " --timeline " + timeline.string());
      ASSERT_EQ(r.status, 0) << model << " " << ranks << "\n" << r.output;
      EXPECT_NE(r.output.find("check    max"), std::string::npos) << r.output;
      // tiny_mlp's rows are single vectors: no row blocks to split.
      if (strategy != "none" && !(strategy == "spatial" && std::string(model) == "tiny_mlp")) {
        EXPECT_TRUE(computed_as(timeline).count(strategy)) << model << " " << ranks;
      }
      if (ranks == 4 && std::string(model) == "tiny_conv") {
        const fs::path b = dir / (std::string(model) + system + "b");
        ASSERT_EQ(run_plan(model, plan, ranks, "--save-outputs " + b.string()).status, 0);
        expect_same_files(a, b);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Distributed, EveryStrategy,
                         ::testing::Values("none", "batch", "out-ch", "in-ch/all-reduce",
                                           "in-ch/reduce-scatter", "spatial"));

// Data parallelism as it should be: with every layer batch-split in one group, the samples
// stay on the ranks from the first layer to the last. Graph inputs are on every rank, so
// nothing is scattered, and only the graph output is gathered, once per inference.
TEST(DistributedRun, BatchChainsGatherOnlyTheirResult) {
  const fs::path dir = scratch("batch_chain");
  const std::string plan = plan_for("tiny_conv", "cpu2", 4, "batch", 2, dir);
  const TimedRun run = run_with_timeline("tiny_conv", plan, 2, dir, "--stream 2");
  ASSERT_EQ(run.result.status, 0) << run.result.output;
  EXPECT_NE(run.result.output.find("check    max"), std::string::npos) << run.result.output;
  int computes = 0, scatters = 0, gathers = 0;
  for (const auto& e : run.events) {
    if (e["rank"] != 0) continue;
    computes += e["kind"] == "compute" && e["how"] == "batch";
    scatters += e["kind"] == "scatter";
    gathers += e["kind"] == "gather";
  }
  EXPECT_GE(computes, 2 * 2) << "tiny_conv should have several layers, each split by batch";
  EXPECT_EQ(scatters, 0);
  EXPECT_EQ(gathers, 2);  // the one graph output, for each of the 2 inferences
}

// Out-channel splits: a layer whose epilogue is elementwise (fc1: MatMul, bias Add) runs
// it on each member's block of channels, constants sliced, so the leader only
// concatenates; one whose epilogue reshapes (q_proj) still has the leader run it. The
// outputs match the reference either way (run_plan checks them).
TEST(DistributedRun, OutChannelElementwiseEpiloguesRunOnTheBlocks) {
  const fs::path dir = scratch("outch_blocks");
  const std::string plan = plan_for("tiny_attention", "cpu2", 2, "out-ch", 2, dir);
  const TimedRun run = run_with_timeline("tiny_attention", plan, 2, dir);
  ASSERT_EQ(run.result.status, 0) << run.result.output;
  std::map<std::string, std::set<std::string>> how;
  for (const auto& e : run.events) {
    if (e["kind"] == "compute" && e["rank"] == 0) {
      how[e["layer"].get<std::string>()].insert(e["how"].get<std::string>());
    }
  }
  EXPECT_EQ(how["fc1"], std::set<std::string>{"out-ch"});
  EXPECT_EQ(how["fc2"], std::set<std::string>{"out-ch"});
  EXPECT_EQ(how["q_proj"], (std::set<std::string>{"epilogue", "out-ch"}));
}

// --repeat: timed rounds of the stream after untimed ones; every timed inference has a
// latency and events, the last round's outputs are checked, and a group left without
// layers (4 ranks, every layer forced onto the first two) waits without holding the run.
TEST(DistributedRun, RepeatedRoundsTimeEveryInferenceAfterAWarmUp) {
  const fs::path dir = scratch("repeat");
  std::string plan = plan_for("tiny_conv", "cpu4", 2, "batch", 2, dir);
  nlohmann::json j = read_json(plan);
  j["groups"].push_back({{"design", "cpu"}, {"devices", 2}, {"first_device", 2}});
  plan = (dir / "two_groups.json").string();
  std::ofstream(plan) << j.dump();
  const fs::path report = dir / "report.json";
  const TimedRun run = run_with_timeline("tiny_conv", plan, 4, dir,
                                         "--stream 2 --repeat 3 --json " + report.string());
  ASSERT_EQ(run.result.status, 0) << run.result.output;
  nlohmann::json rep = read_json(report);
  EXPECT_EQ(rep["latency_ms"]["each"].size(), 6u) << rep.dump();
  EXPECT_GE(rep["warmup_rounds"].get<int>(), 1);
  EXPECT_EQ(rep["repeat"], 3);
  EXPECT_TRUE(rep["check"]["within_tolerance"].get<bool>());
  // tiny_conv's layers take microseconds: no CPU clock read around them.
  EXPECT_TRUE(rep["cpu_share"].is_null());
  std::set<int> inferences, ranks;
  for (const auto& e : run.events) {
    inferences.insert(e["inference"].get<int>());
    ranks.insert(e["rank"].get<int>());
  }
  EXPECT_EQ(inferences, (std::set<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(ranks, (std::set<int>{0, 1}));  // ranks 2 and 3 have nothing to do
}

// Data parallelism over 4 ranks with a batch of 2: members 2 and 3 get no samples, take no
// part in the batch layers' scatters and gathers, and wait for the end without events;
// the outputs still match the reference.
TEST(DistributedRun, MembersWithoutSamplesStayOutOfBatchLayers) {
  const fs::path dir = scratch("holders");
  const std::string plan = plan_for("tiny_attention", "cpu4", 2, "batch", 4, dir);
  const TimedRun run = run_with_timeline("tiny_attention", plan, 4, dir, "--repeat 3");
  ASSERT_EQ(run.result.status, 0) << run.result.output;
  EXPECT_NE(run.result.output.find("check    max"), std::string::npos) << run.result.output;
  std::set<int> ranks;
  int gathers = 0;
  for (const auto& e : run.events) {
    ranks.insert(e["rank"].get<int>());
    if (e["kind"] == "gather") ++gathers;
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1}));
  EXPECT_GT(gathers, 0);  // the result still comes back to the leader
}

// A mid-size model in the default suite: MobileNetV2's GA plan on 2 ranks, batch 2.
TEST(DistributedRun, MobileNetV2PlanOnTwoRanksMatchesTheReference) {
  const fs::path dir = scratch("mobilenet");
  const std::string plan = plan_for("mobilenet_v2", "cpu2", 2, "", 2, dir);
  const Result r = run_plan("mobilenet_v2", plan, 2, "", 300);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("check    max"), std::string::npos) << r.output;
}

TEST(DistributedRun, GaPlansOnTwoAndFourRanksAreCorrectAndRepeatable) {
  const fs::path dir = scratch("ga");
  for (int ranks : {2, 4}) {
    const std::string system = "cpu" + std::to_string(ranks);
    const std::string plan = plan_for("tiny_conv", system, 2, "", ranks, dir);
    const fs::path a = dir / ("a" + system), b = dir / ("b" + system);
    const Result r1 = run_plan("tiny_conv", plan, ranks,
                               "--stream 2 --save-outputs " + a.string() + " --timeline " +
                                   (dir / (system + "_timeline.json")).string() + " --gantt " +
                                   (dir / (system + ".svg")).string());
    ASSERT_EQ(r1.status, 0) << r1.output;
    const Result r2 = run_plan("tiny_conv", plan, ranks, "--save-outputs " + b.string());
    ASSERT_EQ(r2.status, 0) << r2.output;
    expect_same_files(a, b);
    nlohmann::json t = read_json(dir / (system + "_timeline.json"));
    EXPECT_FALSE(t["measured"].empty());
    EXPECT_FALSE(t["predicted"].empty());
    std::ifstream svg(dir / (system + ".svg"));
    std::stringstream svg_text;
    svg_text << svg.rdbuf();
    EXPECT_NE(svg_text.str().find("rank 1 measured"), std::string::npos);
  }
}

// The zoo's big models with the GA's plans for 2 and 4 ranks, batch 1 (label long).
TEST(DistributedRun, LongZooModelsMatchTheReferenceOnTwoAndFourRanks) {
  const fs::path dir = scratch("zoo");
  for (const char* model : {"resnet50", "bert_base", "vit_b_16"}) {
    for (int ranks : {2, 4}) {
      const std::string plan = plan_for(model, "cpu" + std::to_string(ranks), 1, "", ranks, dir);
      const Result r = run_plan(model, plan, ranks, "", 600);
      EXPECT_EQ(r.status, 0) << model << " " << ranks << "\n" << r.output;
      EXPECT_NE(r.output.find("check    max"), std::string::npos) << r.output;
    }
  }
}

// The reference kernels give the reference interpreter's bits for these strategies.
TEST(DistributedRun, ReferenceKernelsAreBitIdenticalWithoutInChannelSums) {
  const fs::path dir = scratch("bits");
  for (const char* strategy : {"none", "batch", "out-ch", "spatial"}) {
    const std::string plan = plan_for("tiny_conv", "cpu2", 2, strategy, 2, dir);
    const Result r = run_plan("tiny_conv", plan, 2, "--reference-kernels");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("bit-identical yes"), std::string::npos) << strategy << r.output;
  }
}

TEST(DistributedRun, WrongWorldSizeOrModelFailsOnEveryRankWithoutHanging) {
  const fs::path dir = scratch("errors");
  const std::string plan = plan_for("tiny_conv", "cpu2", 1, "", 2, dir);
  const Result size = run_plan("tiny_conv", plan, 3);
  EXPECT_NE(size.status, 0);
  for (int rank = 0; rank < 3; ++rank) {  // every rank says why
    EXPECT_NE(
        size.output.find("rank " + std::to_string(rank) + ": " + plan + ": the plan needs 2 ranks"),
        std::string::npos)
        << size.output;
  }
  const Result other = run_plan("tiny_mlp", plan, 2);
  EXPECT_NE(other.status, 0);
  EXPECT_NE(other.output.find("another model"), std::string::npos) << other.output;
}

}  // namespace

namespace {

// `orchid calibrate-net` on 2 ranks writes every fit and the runner's step per layer into
// the system file, which the system loader reads back for the evaluator.
TEST(DistributedCalibrate, WritesFitsAndTheRunnerStepTheLoaderReads) {
  const fs::path dir = scratch("calibrate");
  const fs::path system = dir / "cpu2.toml";
  fs::copy_file(kSystems + "cpu2.toml", system, fs::copy_options::overwrite_existing);
  const Result r = sh(mpirun(2) + kOrchid + " calibrate-net --system " + system.string() +
                      " --max-bytes 65536 --reps 3");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("runner step"), std::string::npos) << r.output;
  std::ifstream in(system);
  std::stringstream text;
  text << in.rdbuf();
  for (const char* table :
       {"[network.p2p]", "[network.allreduce]", "[network.runner]", "gbs", "split_us"}) {
    EXPECT_NE(text.str().find(table), std::string::npos) << table << "\n" << text.str();
  }
  const Result map = sh(kOrchid + " map " + kModels + "/tiny_conv.onnx --system " +
                        system.string() + " --batch 2 --quiet --generations 2");
  EXPECT_EQ(map.status, 0) << map.output;
  fs::remove_all(dir);
}

}  // namespace
