// `orchid`: decides how a DNN should run on hardware. Thin layer over the library.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "cli/commands.hpp"
#include "cli/config_dirs.hpp"
#include "util/error.hpp"

int main(int argc, char** argv) {
  // All of orchid's threads are OpenMP's (oneDNN, fused loops, reference kernels), so
  // libgomp's default wait policy (spin briefly between parallel regions, then sleep)
  // is the right one: a kernel starts without waking sleeping threads.
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
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (const auto& [name, action] : commands) {
      if (app.got_subcommand(name)) action();
    }
  } catch (const orchid::Error& e) {
    std::fprintf(stderr, "orchid: error: %s\n", e.what());
    return 1;
  } catch (const orchid::InternalError& e) {
    // A bug in orchid, whatever the input: a different prefix and exit code.
    std::fprintf(stderr, "orchid: internal error: %s (a bug in orchid, please report it)\n",
                 e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "orchid: internal error: unexpected %s\n", e.what());
    return 3;
  }
  return 0;
}
