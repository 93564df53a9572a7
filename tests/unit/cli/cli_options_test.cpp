// CLI details a user meets: parse errors read like every other error, options that would
// do nothing are refused, --help shows defaults, search progress stays off stdout, and a
// plan the solver did not prove optimal is not called optimal.
#include <gtest/gtest.h>

#include <string>

#include "cli/cli_runner.hpp"

namespace orchid {
namespace {

using cli_testing::expect_user_error;
using cli_testing::model;
using cli_testing::Result;
using cli_testing::run_cli;

const std::string kFpga4 = std::string(ORCHID_SOURCE_DIR) + "/configs/systems/fpga4.toml";

TEST(CliOptions, ParseErrorsReadLikeOtherErrors) {
  expect_user_error(run_cli("frob"), "unknown subcommand 'frob' (one of: inspect, run",
                    "unknown subcommand");
  expect_user_error(run_cli("map tiny_mlp --system " + kFpga4 + " --bogus"), "--bogus",
                    "unknown option");
  expect_user_error(run_cli("orchestrate " + model("tiny_mlp") + " --max-kernel-size x"),
                    "--max-kernel-size", "not a number");
  expect_user_error(run_cli("map"), "workload is required", "missing positional");
}

TEST(CliOptions, OptionsWithoutEffectAreErrors) {
  expect_user_error(run_cli("orchestrate " + model("tiny_mlp") + " --plan-kind greedy-fusion"),
                    "--plan-kind has no effect without --json or --dot", "--plan-kind alone");
  expect_user_error(run_cli("orchestrate " + model("tiny_mlp") + " --static-part"),
                    "--static-part has no effect", "--static-part on a static model");
  expect_user_error(run_cli("map tiny_mlp --system " + kFpga4 + " --gpu-roofline"),
                    "--gpu-roofline has no effect: system 'fpga4' has no GPU",
                    "--gpu-roofline without GPUs");
  // With what it needs, the same option is accepted.
  EXPECT_EQ(run_cli("orchestrate " + model("tiny_mlp") +
                    " --plan-kind greedy-fusion --dot /dev/null/none.dot")
                .err.find("has no effect"),
            std::string::npos);
}

TEST(CliOptions, MapHelpShowsDefaults) {
  const Result r = run_cli("map --help");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* shown : {"=150", "=40", "=25", "--seed UINT=1", "=1 "}) {
    EXPECT_NE(r.out.find(shown), std::string::npos) << shown << "\n" << r.out;
  }
}

TEST(CliOptions, SearchProgressStaysOffStdoutAndOffShortLogs) {
  // stderr is a file here, not a terminal, and the search is short: no progress at all.
  const Result r = run_cli("map tiny_mlp --system " + kFpga4 + " --generations 3 --seed 2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("gen "), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("latency      plan"), std::string::npos) << r.out;
}

TEST(CliOptions, SystemByNameOrPath) {
  const Result named = run_cli("map tiny_mlp --system fpga4 --generations 2 --quiet");
  ASSERT_EQ(named.code, 0) << named.err;
  EXPECT_NE(named.out.find("system       fpga4"), std::string::npos) << named.out;
  const Result pathed = run_cli("map tiny_mlp --system " + kFpga4 + " --generations 2 --quiet");
  ASSERT_EQ(pathed.code, 0) << pathed.err;
  EXPECT_NE(pathed.out.find("system       fpga4"), std::string::npos) << pathed.out;
  expect_user_error(run_cli("map tiny_mlp --system fpga5"), "unknown system 'fpga5'",
                    "unknown system name");
}

TEST(CliOptions, TimeLimitedPlanIsBestFoundNotOptimal) {
  // 1 ms cannot even cover enumeration for MobileNetV2: the BLP keeps its warm start.
  const Result cut = run_cli("orchestrate " + model("mobilenet_v2") + " --time-limit 0.001");
  ASSERT_EQ(cut.code, 0) << cut.err;
  EXPECT_NE(cut.out.find("best found (gap "), std::string::npos) << cut.out;
  EXPECT_EQ(cut.out.find("\noptimal "), std::string::npos) << cut.out;
  const Result full = run_cli("orchestrate " + model("tiny_conv"));
  ASSERT_EQ(full.code, 0) << full.err;
  EXPECT_NE(full.out.find("proven optimal"), std::string::npos) << full.out;
  EXPECT_NE(full.out.find("\noptimal "), std::string::npos) << full.out;
  EXPECT_EQ(full.out.find("best found"), std::string::npos) << full.out;
}

}  // namespace
}  // namespace orchid
