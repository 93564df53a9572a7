// The `orchid` binary as a user runs it: exit codes, one-line errors, outputs on disk.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include "cli/cli_runner.hpp"
#include "ir/npy.hpp"
#include "onnx/proto_io.hpp"

namespace fs = std::filesystem;

namespace orchid {
namespace {

using cli_testing::expect_user_error;
using cli_testing::model;
using cli_testing::Result;
using cli_testing::run_cli;

TEST(Cli, VersionAndHelp) {
  EXPECT_EQ(run_cli("--version").code, 0);
  EXPECT_NE(run_cli("--version").out.find("orchid"), std::string::npos);
  for (const char* sub : {"", "inspect ", "run ", "materialize "}) {
    const Result r = run_cli(std::string(sub) + "--help");
    EXPECT_EQ(r.code, 0) << sub;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << sub;
  }
}

TEST(Cli, InspectPrintsSummary) {
  const Result r = run_cli("inspect " + model("tiny_conv"));
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* key : {"input", "output", "parameters", "FLOPs", "Conv", "nodes"}) {
    EXPECT_NE(r.out.find(key), std::string::npos) << key << "\n" << r.out;
  }
}

TEST(Cli, RunSavesOutputsAsNpy) {
  const fs::path dir = fs::temp_directory_path() / "orchid_cli_run";
  fs::remove_all(dir);
  const Result r =
      run_cli("run " + model("tiny_mlp") + " --seed 3 --repeat 2 --save-outputs " + dir.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("median"), std::string::npos);
  const Tensor probs = read_npy((dir / "probs.npy").string());
  EXPECT_EQ(probs.shape(), (Shape{4, 10}));
  // Same seed, same outputs; a given input file replaces the random one.
  write_npy((dir / "x.npy").string(), Tensor(DType::F32, {4, 16}));
  const fs::path dir2 = fs::temp_directory_path() / "orchid_cli_run2";
  ASSERT_EQ(run_cli("run " + model("tiny_mlp") + " --input x=" + (dir / "x.npy").string() +
                    " --save-outputs " + dir2.string())
                .code,
            0);
  EXPECT_NE(read_npy((dir2 / "probs.npy").string()), probs);
}

TEST(Cli, ErrorsAreOneLineAndNonZero) {
  const Result missing = run_cli("inspect /nonexistent/model.onnx");
  EXPECT_NE(missing.code, 0);
  EXPECT_NE(missing.err.find("/nonexistent/model.onnx"), std::string::npos) << missing.err;
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;

  const Result bad_input = run_cli("run " + model("tiny_mlp") + " --input nosuch=x.npy");
  EXPECT_NE(bad_input.code, 0);
  EXPECT_NE(bad_input.err.find("nosuch"), std::string::npos) << bad_input.err;

  const Result wrong_shape = run_cli("run " + model("tiny_mlp") + " --shape x=4x17");
  EXPECT_NE(wrong_shape.code, 0);
  EXPECT_NE(wrong_shape.err.find("MatMul"), std::string::npos) << wrong_shape.err;

  EXPECT_NE(run_cli("frobnicate").code, 0);
  EXPECT_NE(run_cli("run").code, 0);  // missing model argument
}

TEST(Cli, DetectionModelRunsButIsNotOrchestrated) {
  // ssdlite320's NMS makes output sizes data-dependent: the reference interpreter runs
  // it, orchestration refuses it in one line naming file and node (--static-part
  // orchestrates what comes before), and run --device cpu splits it.
  const Result inspect = run_cli("inspect " + model("ssdlite320"));
  ASSERT_EQ(inspect.code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("data-dependent output shapes"), std::string::npos) << inspect.out;
  const Result run = run_cli("run " + model("ssdlite320"));
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("output   boxes  f32 20x4"), std::string::npos) << run.out;
  for (const char* command : {"orchestrate "}) {
    const Result refused = run_cli(command + model("ssdlite320"));
    EXPECT_NE(refused.code, 0) << command;
    EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
    for (const char* part : {"ssdlite320.onnx", "static shapes", "NonZero node"}) {
      EXPECT_NE(refused.err.find(part), std::string::npos) << part << ": " << refused.err;
    }
  }
  // On the CPU the static part runs on the plan executor and the reference interpreter
  // finishes the data-dependent rest: the same detections as the interpreter alone.
  const Result cpu = run_cli("run --device cpu " + model("ssdlite320"));
  ASSERT_EQ(cpu.code, 0) << cpu.err;
  EXPECT_NE(cpu.out.find("output   boxes  f32 20x4"), std::string::npos) << cpu.out;
  EXPECT_NE(cpu.out.find("the data-dependent rest"), std::string::npos) << cpu.out;
  for (const char* line : {"output   boxes", "output   scores", "output   labels"}) {
    const auto a = run.out.find(line), b = cpu.out.find(line);
    ASSERT_NE(b, std::string::npos) << line;
    EXPECT_EQ(run.out.substr(a, run.out.find('\n', a) - a),
              cpu.out.substr(b, cpu.out.find('\n', b) - b));
  }
}

// ---------------------------------------------------------------- hostile input

// stderr is exactly one "orchid: error: ..." line and the exit code is 1.
TEST(CliHostile, HugeShapesAreRefusedBeforeAllocating) {
  // 2^62 + 1 rows: the element count wrapped to 16 and Transpose/MatMul ran off a buffer.
  expect_user_error(run_cli("run " + model("tiny_mlp") + " --shape x=4611686018427387905x16"),
                    "too many elements", "wrapping shape");
  expect_user_error(run_cli("run " + model("tiny_mlp") + " --shape x=99999999999999999999x16"),
                    "64-bit integer", "strtoll overflow");
  expect_user_error(run_cli("run " + model("tiny_mlp") + " --shape x=1099511627776x16"),
                    "memory budget", "2^40 rows");
  expect_user_error(run_cli("run " + model("tiny_mlp") + " --memory-budget 1 --shape x=65536x16"),
                    "memory budget", "--memory-budget");
}

TEST(CliHostile, DuplicateAndSpecialInputsAreRefused) {
  expect_user_error(run_cli("inspect " + model("tiny_mlp") + " --shape x=1x16 --shape x=2x16"),
                    "more than once", "--shape twice");
  const fs::path dir =
      fs::temp_directory_path() / ("orchid_cli_hostile_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string x = (dir / "x.npy").string();
  write_npy(x, Tensor(DType::F32, {1, 16}));
  expect_user_error(run_cli("run " + model("tiny_mlp") + " --input x=" + x + " --input x=" + x),
                    "more than once", "--input twice");
  expect_user_error(run_cli("run " + model("tiny_mlp") + " --input x=/dev/zero"),
                    "only regular files", "/dev/zero");
  const fs::path fifo = dir / "fifo.npy";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_user_error(run_cli("run " + model("tiny_mlp") + " --input x=" + fifo.string()),
                    "only regular files", "FIFO");
  fs::remove_all(dir);
}

TEST(CliHostile, NumericOptionsAreRangeChecked) {
  const std::string map = "map tiny_mlp --system " + std::string(ORCHID_SOURCE_DIR) +
                          "/configs/systems/fpga4.toml --quiet ";
  for (const char* option :
       {"--threads 10000", "--threads -1", "--time-limit nan", "--time-limit inf",
        "--time-limit -1", "--time-limit 0", "--generations 99999999999999999999", "--population 0",
        "--batch 0", "--batch 1e300"}) {
    const std::string name = std::string(option).substr(0, std::string(option).find(' '));
    expect_user_error(run_cli(map + option), name, option);
  }
  expect_user_error(run_cli("run " + model("tiny_mlp") + " --repeat 0"), "--repeat", "--repeat 0");
  for (const char* option : {"--threads 0", "--threads -3", "--threads 5000"}) {
    expect_user_error(run_cli("run " + model("tiny_mlp") + " " + option), "--threads", option);
  }
  expect_user_error(run_cli("run " + model("tiny_mlp") + " --device cpu --k-best 0"), "--k-best",
                    "--k-best 0");
  expect_user_error(run_cli("orchestrate " + model("tiny_mlp") + " --time-limit nan"),
                    "--time-limit", "orchestrate --time-limit nan");
}

TEST(CliHostile, ParseErrorsAreOneLine) {
  expect_user_error(run_cli("run"), "model", "missing argument");
  expect_user_error(run_cli("run " + model("tiny_mlp") + " --frobnicate"), "frobnicate",
                    "unknown option");
  expect_user_error(run_cli("frobnicate"), "subcommand", "unknown command");
}

TEST(CliHostile, ControlCharactersAreEscaped) {
  // The name reaches the message; the terminal must not see the escape sequence.
  const Result r =
      run_cli("run " + model("tiny_mlp") + " --input \"$(printf 'bad\\033[2Jname')=f.npy\"");
  expect_user_error(r, "bad\\x1b[2Jname", "escape sequence");
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos);
}

TEST(CliHostile, MultiFileOutputsAreAllOrNothing) {
  const fs::path dir =
      fs::temp_directory_path() / ("orchid_cli_all_or_none_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path json = dir / "plan.json";
  expect_user_error(run_cli("orchestrate " + model("tiny_mlp") + " --json " + json.string() +
                            " --dot " + (dir / "missing" / "plan.dot").string()),
                    "plan.dot", "failing --dot");
  EXPECT_FALSE(fs::exists(json));
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
}

TEST(CliHostile, OutputNamesThatSanitiseAlikeAreAnError) {
  const fs::path dir = fs::temp_directory_path() / ("orchid_cli_names_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "out");
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("collide");
  auto* in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(2);
  for (const auto& [op, out] : {std::pair{"Relu", "a/b"}, std::pair{"Neg", "a:b"}}) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->add_input("x");
    n->add_output(out);
    g->add_output()->set_name(out);
  }
  const std::string file = (dir / "collide.onnx").string();
  save_model_proto(m, file);
  const Result r = run_cli("run " + file + " --save-outputs " + (dir / "out").string());
  expect_user_error(r, "a_b.npy", "collision");
  EXPECT_NE(r.err.find("'a/b'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'a:b'"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(dir / "out"));
  fs::remove_all(dir);
}

// Configs are found through --config-dir, then $ORCHID_CONFIG_DIR, then the installed
// share directory, then the source tree (a development fallback).
TEST(Cli, ConfigRootsFromFlagAndEnvironment) {
  const fs::path root =
      fs::temp_directory_path() / ("orchid_cli_configs_" + std::to_string(getpid()));
  fs::create_directories(root / "devices");
  fs::copy_file(fs::path(ORCHID_SOURCE_DIR) / "configs" / "devices" / "a100.toml",
                root / "devices" / "mygpu.toml", fs::copy_options::overwrite_existing);
  const std::string orchestrate = "orchestrate " + model("tiny_mlp") + " --device mygpu";
  const Result unknown = run_cli(orchestrate);
  EXPECT_EQ(unknown.code, 1);
  EXPECT_NE(unknown.err.find("orchid: error: unknown device 'mygpu'"), std::string::npos)
      << unknown.err;
  const Result by_flag = run_cli(orchestrate + " --config-dir " + root.string());
  EXPECT_EQ(by_flag.code, 0) << by_flag.err;
  const Result flag_first = run_cli("--config-dir " + root.string() + " " + orchestrate);
  EXPECT_EQ(flag_first.code, 0) << flag_first.err;
  const std::string env_cmd = "env ORCHID_CONFIG_DIR=" + root.string() + " " +
                              std::string(ORCHID_BINARY) + " " + orchestrate + " >/dev/null 2>&1";
  EXPECT_EQ(std::system(env_cmd.c_str()), 0);
  // The source tree still supplies what the extra root lacks.
  EXPECT_EQ(
      run_cli("orchestrate " + model("tiny_mlp") + " --device a100 --config-dir " + root.string())
          .code,
      0);
  fs::remove_all(root);
}

// The GPU backend from the command line: a plan as generated OpenCL on the first OpenCL
// device (PoCL here), sources written by `codegen`, and --device cuda refusing in one
// line where it cannot run.
TEST(Cli, GpuBackendRunsAndWritesSources) {
  const Result ocl =
      run_cli("run " + model("tiny_mlp") + " --device opencl --plan-kind greedy-fusion");
  if (ocl.code != 0 && ocl.err.find("OpenCL") != std::string::npos &&
      ocl.err.find("platform") != std::string::npos) {
    GTEST_SKIP() << ocl.err;
  }
  ASSERT_EQ(ocl.code, 0) << ocl.err;
  EXPECT_NE(ocl.out.find("opencl on"), std::string::npos) << ocl.out;
  EXPECT_NE(ocl.out.find("output   probs"), std::string::npos) << ocl.out;
  const fs::path dir =
      fs::temp_directory_path() / ("orchid_cli_codegen_" + std::to_string(getpid()));
  const Result gen =
      run_cli("codegen " + model("tiny_conv") + " --target opencl --out " + dir.string());
  ASSERT_EQ(gen.code, 0) << gen.err;
  for (const char* f : {"plan.cl", "launches.json", "weights.bin", "Makefile"}) {
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  }
  fs::remove_all(dir);
  EXPECT_NE(
      run_cli("codegen " + model("tiny_conv") + " --target vulkan --out " + dir.string()).code, 0);
  const Result cuda = run_cli("run " + model("tiny_mlp") + " --device cuda");
  if (cuda.code != 0) {
    EXPECT_EQ(cuda.code, 1);
    EXPECT_EQ(cuda.err.rfind("orchid: error: --device cuda: ", 0), 0u) << cuda.err;
  }
}

// GPU-only options are refused in one line where they do not apply.
TEST(Cli, GpuBackendOptionsAreChecked) {
  const Result vendor = run_cli("run " + model("tiny_mlp") + " --linear-backend vendor");
  EXPECT_EQ(vendor.code, 1);
  EXPECT_NE(vendor.err.find("--linear-backend goes with --device cuda"), std::string::npos)
      << vendor.err;
  EXPECT_NE(run_cli("run " + model("tiny_mlp") + " --device cuda --linear-backend cublas").code, 0);
  const Result ocl = run_cli("run " + model("tiny_mlp") + " --device opencl --profile");
  EXPECT_EQ(ocl.code, 1);
  EXPECT_NE(ocl.err.find("not through OpenCL"), std::string::npos) << ocl.err;
  const Result cuda = run_cli("run " + model("tiny_mlp") + " --device cuda --profile");
  if (cuda.code != 0) {  // no GPU here: one line saying why
    EXPECT_EQ(cuda.code, 1);
    EXPECT_EQ(cuda.err.rfind("orchid: error: --device cuda: ", 0), 0u) << cuda.err;
  }
}

// The header names the threads and oneDNN's ISA; ONEDNN_MAX_CPU_ISA caps the ISA.
TEST(CliCpu, HeaderNamesThreadsAndIsaAndHonoursMaxIsa) {
  const Result plain = run_cli("run " + model("tiny_mlp") + " --threads 1");
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_NE(plain.out.find("cpu      1 threads"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("oneDNN ISA "), std::string::npos) << plain.out;
  const std::string cmd = "ONEDNN_MAX_CPU_ISA=AVX2 " + std::string(ORCHID_BINARY) + " run " +
                          model("tiny_mlp") + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), pipe)) out += buf.data();
  ASSERT_EQ(pclose(pipe), 0) << out;
  EXPECT_NE(out.find("oneDNN ISA avx2 (ONEDNN_MAX_CPU_ISA=AVX2)"), std::string::npos) << out;
}

// The default CPU run times the ranked plans and greedy fusion, keeps the fastest, and
// prints orchestration time, predicted and measured time apart from the run time.
TEST(CliCpu, DefaultRunSelectsAmongRankedPlansAndGreedy) {
  // A cache folder of its own: the selection's choice is cached there (see below).
  namespace fs = std::filesystem;
  const fs::path cache =
      fs::temp_directory_path() / ("orchid_select_cache_" + std::to_string(getpid()));
  const char* old_xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved_xdg = old_xdg ? old_xdg : "";
  ::setenv("XDG_CACHE_HOME", cache.c_str(), 1);
  struct Restore {
    std::string saved;
    bool had;
    fs::path dir;
    ~Restore() {
      if (had) {
        ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
      } else {
        ::unsetenv("XDG_CACHE_HOME");
      }
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } restore{saved_xdg, old_xdg != nullptr, cache};
  // The wait policy is part of the cache key, and orchid picks it from the load it sees
  // at start, which other tests running beside this one change from run to run: a
  // policy chosen here keeps it fixed (the user's choice is kept, cpu_environment.hpp).
  const char* old_spin = std::getenv("GOMP_SPINCOUNT");
  const std::string saved_spin = old_spin ? old_spin : "";
  ::setenv("GOMP_SPINCOUNT", "1000", 1);
  struct RestoreSpin {
    std::string saved;
    bool had;
    ~RestoreSpin() {
      if (had) {
        ::setenv("GOMP_SPINCOUNT", saved.c_str(), 1);
      } else {
        ::unsetenv("GOMP_SPINCOUNT");
      }
    }
  } restore_spin{saved_spin, old_spin != nullptr};
  const Result r = run_cli("run " + model("tiny_attention") +
                           " --device cpu --repeat 3 --select-seconds 0.2 --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("orchestrate "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("select   "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("candidate plans timed end to end"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("plan     predicted "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("spread   coefficient of variation"), std::string::npos) << r.out;
  // The same model, candidates, ISA and threads: the cached choice, no timing; a changed
  // key (threads) or --reselect times the candidates again.
  const std::string same =
      "run " + model("tiny_attention") + " --device cpu --repeat 3 --select-seconds 0.2";
  const Result again = run_cli(same + " --threads 1");
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("select   reused the choice cached in"), std::string::npos) << again.out;
  EXPECT_EQ(again.out.find("candidate plans timed end to end"), std::string::npos) << again.out;
  for (const std::string& changed : {same + " --threads 2", same + " --threads 1 --reselect"}) {
    const Result timed = run_cli(changed);
    ASSERT_EQ(timed.code, 0) << timed.err;
    EXPECT_NE(timed.out.find("candidate plans timed end to end"), std::string::npos) << timed.out;
  }
  const Result fixed =
      run_cli("run " + model("tiny_attention") + " --device cpu --plan-kind optimal --threads 1");
  ASSERT_EQ(fixed.code, 0) << fixed.err;
  EXPECT_EQ(fixed.out.find("select   "), std::string::npos) << fixed.out;
  EXPECT_NE(fixed.out.find("plan     predicted "), std::string::npos) << fixed.out;

  // `orchestrate --plan-kind fastest` writes the plan the same selection keeps, which
  // `run --plan` executes. It shares run's cache (the run above with 2 threads stored this
  // key's choice): timed again with --reselect, then taken from the cache.
  const fs::path plan = cache / "fastest.json";
  const std::string orchestrate = "orchestrate " + model("tiny_attention") +
                                  " --device cpu --plan-kind fastest --select-seconds 0.2 --json " +
                                  plan.string();
  const Result chosen = run_cli(orchestrate + " --reselect");
  ASSERT_EQ(chosen.code, 0) << chosen.err;
  EXPECT_NE(chosen.out.find("candidate plans timed end to end"), std::string::npos) << chosen.out;
  EXPECT_NE(chosen.out.find("in context"), std::string::npos) << chosen.out;
  const std::size_t wrote = chosen.out.find("wrote " + plan.string() + " (");
  ASSERT_NE(wrote, std::string::npos) << chosen.out;
  const std::string kind = chosen.out.substr(chosen.out.find('(', wrote) + 1);
  EXPECT_TRUE(kind.rfind("optimal", 0) == 0 || kind.rfind("greedy-fusion", 0) == 0) << kind;
  const Result ran = run_cli("run " + model("tiny_attention") + " --plan " + plan.string());
  ASSERT_EQ(ran.code, 0) << ran.err;
  const Result cached = run_cli(orchestrate);
  ASSERT_EQ(cached.code, 0) << cached.err;
  EXPECT_NE(cached.out.find("cached in"), std::string::npos) << cached.out;
  const Result gpu = run_cli("orchestrate " + model("tiny_attention") +
                             " --device a100 --plan-kind fastest --json " + plan.string());
  EXPECT_NE(gpu.code, 0);
  EXPECT_NE(gpu.err.find("--device 'a100' is not the CPU"), std::string::npos) << gpu.err;
  const Result stray = run_cli("orchestrate " + model("tiny_attention") +
                               " --device cpu --k-best 2 --json " + plan.string());
  EXPECT_NE(stray.code, 0);
  EXPECT_NE(stray.err.find("--k-best"), std::string::npos) << stray.err;
}

}  // namespace
}  // namespace orchid
