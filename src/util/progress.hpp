// A progress report for long loops, on a stream (stderr): on a terminal one line redrawn
// in place (bar, count, elapsed, estimated time left); otherwise - a log, a pipe - a
// plain line every `log_interval_seconds` and at the end, so logs stay readable.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace orchid {

class ProgressReporter {
 public:
  // `what`: "profiling", `unit`: "kernels". `total` may be 0 (nothing is printed then).
  ProgressReporter(std::string what, std::string unit, std::size_t total, std::FILE* out = stderr,
                   double log_interval_seconds = 10.0);
  ~ProgressReporter();
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  // `done` items are finished.
  void update(std::size_t done);
  // Prints the final line (once).
  void finish();

  // "1 h 02 min", "3 min 05 s", "12.3 s".
  static std::string format_duration(double seconds);

 private:
  void print(bool final);

  std::string what_;
  std::string unit_;
  std::size_t total_;
  std::size_t done_ = 0;
  std::FILE* out_;
  bool tty_;
  double log_interval_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_print_;
  bool finished_ = false;
};

}  // namespace orchid
