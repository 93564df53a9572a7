// Mapping plans executed under mpirun (2 and 4 ranks, --oversubscribe): every output
// equals the single-process reference interpreter (`orchid run --mapping ... --check`:
// |d| <= 1e-4 + 1e-3 |ref|; bit-identical except after in-channel sums), every sharding
// strategy forced on a one-group plan, two runs give the same bytes, and a plan for
// another world size or model fails on every rank without hanging.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

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

std::string mpirun(int ranks) {
  return std::string(
             "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
             "OMPI_MCA_rmaps_base_oversubscribe=1 ") +
         ORCHID_MPIEXEC + " -n " + std::to_string(ranks) + " --oversubscribe ";
}

const std::string kOrchid = ORCHID_BINARY;
const std::string kModels = ORCHID_MODELS_DIR;
const std::string kSystems = std::string(ORCHID_SOURCE_DIR) + "/configs/systems/";

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("orchid_mpi_" + name);
  fs::create_directories(dir);
  return dir;
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
  nlohmann::json j;
  std::ifstream(json) >> j;
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

class EveryStrategy : public ::testing::TestWithParam<const char*> {};

TEST_P(EveryStrategy, TinyModelsMatchTheReferenceOnTwoRanks) {
  const fs::path dir = scratch("strategy");
  for (const char* model : {"tiny_conv", "tiny_mlp", "tiny_attention"}) {
    const std::string plan = plan_for(model, "cpu2", 2, GetParam(), 2, dir);
    const Result r = run_plan(model, plan, 2);
    EXPECT_EQ(r.status, 0) << model << "\n" << r.output;
    EXPECT_NE(r.output.find("check    max"), std::string::npos) << r.output;
  }
}

INSTANTIATE_TEST_SUITE_P(Distributed, EveryStrategy,
                         ::testing::Values("none", "batch", "out-ch", "in-ch/all-reduce",
                                           "in-ch/reduce-scatter", "spatial"));

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
    for (const auto& entry : fs::directory_iterator(a)) {
      std::ifstream fa(entry.path(), std::ios::binary),
          fb(b / entry.path().filename(), std::ios::binary);
      std::stringstream sa, sb;
      sa << fa.rdbuf();
      sb << fb.rdbuf();
      EXPECT_EQ(sa.str(), sb.str()) << entry.path();
    }
    nlohmann::json t;
    std::ifstream(dir / (system + "_timeline.json")) >> t;
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
  for (const char* strategy : {"none", "batch", "out-ch"}) {
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
