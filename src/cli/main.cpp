// `orchid`: decides how a DNN should run on hardware. Thin layer over the library.
//
// Every failure ends in one stderr line: "orchid: error: ..." (exit 1) for anything the
// user's input or options caused, "orchid: internal error: ..." (exit 3) for a bug.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

#include <fmt/format.h>

#include <unistd.h>

#include "cli/commands.hpp"
#include "cli/config_dirs.hpp"
#include "profile/cpu_environment.hpp"
#include "util/error.hpp"
#include "util/printable.hpp"

namespace {

constexpr int kUserErrorExit = 1;
constexpr int kInternalErrorExit = 3;

int report(const char* prefix, std::string_view message, int code) {
  std::fprintf(stderr, "orchid: %s: %s\n", prefix, orchid::printable(message).c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  // All of orchid's threads are OpenMP's (oneDNN, fused loops, reference kernels). libgomp
  // reads its wait policy once, when loaded, so orchid re-executes itself with the policy
  // it chooses (cpu_environment.hpp: a short spin on idle cores, else sleeping at once)
  // unless the user chose one, and without OpenBLAS's thread pool (loaded with CBC, idle
  // but spinning on the executor's cores).
  if (const auto env = orchid::wanted_openmp_environment(); !env.empty()) {
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    execv("/proc/self/exe", argv);  // on failure, carry on with the defaults
  }
  orchid::keep_blas_single_threaded();  // should the re-execution have failed
  orchid::return_large_blocks_to_the_system();
  CLI::App app{"orchid: kernel orchestration and multi-accelerator mapping for ONNX models"};
  app.set_version_flag("--version", std::string("orchid ") + ORCHID_VERSION);
  app.require_subcommand(1);
  // Global options (--config-dir) may also follow the subcommand's name.
  app.fallthrough();
  orchid::cli::add_config_dir_option(app);
  // One entry per subcommand: its name and what runs when it is chosen.
  const std::vector<std::pair<std::string, orchid::cli::Action>> commands = {
      {"inspect", orchid::cli::add_inspect_command(app)},
      {"run", orchid::cli::add_run_command(app)},
      {"materialize", orchid::cli::add_materialize_command(app)},
      {"map", orchid::cli::add_map_command(app)},
      {"orchestrate", orchid::cli::add_orchestrate_command(app)},
      {"codegen", orchid::cli::add_codegen_command(app)},
      {"calibrate-net", orchid::cli::add_calibrate_net_command(app)},
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // `orchid frob`: CLI11 would say "A subcommand is required"; name the word and the choices.
    if (app.get_subcommands().empty() && argc > 1 && argv[1][0] != '-') {
      std::string names;
      for (const auto& command : commands) names += (names.empty() ? "" : ", ") + command.first;
      return report("error", fmt::format("unknown subcommand '{}' (one of: {})", argv[1], names),
                    kUserErrorExit);
    }
    return report("error", e.what(), kUserErrorExit);
  }
  try {
    for (const auto& [name, action] : commands) {
      if (app.got_subcommand(name)) action();
    }
  } catch (const orchid::Error& e) {
    return report("error", e.what(), kUserErrorExit);
  } catch (const std::bad_alloc&) {
    return report("error", "out of memory: the input needs more memory than this machine has",
                  kUserErrorExit);
  } catch (const orchid::InternalError& e) {
    // A bug in orchid, whatever the input: a different prefix and exit code.
    return report("internal error", std::string(e.what()) + " (a bug in orchid, please report it)",
                  kInternalErrorExit);
  } catch (const std::exception& e) {
    return report("internal error", std::string("unexpected ") + e.what(), kInternalErrorExit);
  }
  return 0;
}
