// Runs the `orchid` binary as a user does: exit code, stdout and stderr of one call.
#pragma once

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include <sys/wait.h>

namespace orchid {

struct Result {
  int code;
  std::string out;  // stdout
  std::string err;  // stderr
};

inline Result run_cli(const std::string& args) {
  // One file per process and call: ctest runs the Cli tests in parallel processes.
  static int calls = 0;
  const std::filesystem::path err_file = std::filesystem::temp_directory_path() /
                                         ("orchid_cli_test_stderr_" + std::to_string(getpid()) +
                                          "_" + std::to_string(++calls) + ".txt");
  const std::string cmd = std::string(ORCHID_BINARY) + " " + args + " 2>" + err_file.string();
  Result r{0, "", ""};
  FILE* pipe = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), pipe)) r.out += buf.data();
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  FILE* f = fopen(err_file.c_str(), "r");
  if (f) {
    while (fgets(buf.data(), buf.size(), f)) r.err += buf.data();
    fclose(f);
  }
  std::error_code ec;
  std::filesystem::remove(err_file, ec);
  return r;
}

}  // namespace orchid
