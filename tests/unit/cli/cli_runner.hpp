// Runs the `orchid` binary as a user does (a shell command line) and keeps its exit code,
// stdout and stderr, for the CLI tests.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace orchid::cli_testing {

struct Result {
  int code;
  std::string out;  // stdout
  std::string err;  // stderr
};

inline Result run_cli(const std::string& args) {
  namespace fs = std::filesystem;
  // One file per process and call: ctest runs the Cli tests in parallel processes.
  static int calls = 0;
  const fs::path err_file =
      fs::temp_directory_path() / ("orchid_cli_test_stderr_" + std::to_string(getpid()) + "_" +
                                   std::to_string(++calls) + ".txt");
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
  fs::remove(err_file, ec);
  return r;
}

// models/<name>.onnx of the source tree.
inline std::string model(const std::string& name) {
  return std::string(ORCHID_MODELS_DIR) + "/" + name + ".onnx";
}

// Exit 1 and exactly one line "orchid: error: ..." that contains `text`.
inline void expect_user_error(const Result& r, const std::string& text, const std::string& what) {
  EXPECT_EQ(r.code, 1) << what << ": " << r.err;
  EXPECT_EQ(r.err.rfind("orchid: error: ", 0), 0u) << what << ": " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": " << r.err;
  EXPECT_NE(r.err.find(text), std::string::npos) << what << ": " << r.err;
}

}  // namespace orchid::cli_testing
