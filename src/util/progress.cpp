#include "util/progress.hpp"

#include <unistd.h>

#include <cmath>

#include <fmt/format.h>

namespace orchid {

ProgressReporter::ProgressReporter(std::string what, std::string unit, std::size_t total,
                                   std::FILE* out, double log_interval_seconds)
    : what_(std::move(what)),
      unit_(std::move(unit)),
      total_(total),
      out_(out),
      tty_(out && ::isatty(::fileno(out)) != 0),
      log_interval_(log_interval_seconds),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {
  if (out_ && total_ > 0 && !tty_) {
    fmt::print(out_, "{}: {} {} to go\n", what_, total_, unit_);
    std::fflush(out_);
  }
}

ProgressReporter::~ProgressReporter() {
  finish();
}

std::string ProgressReporter::format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  if (s < 60) return fmt::format("{:.1f} s", s);
  const auto total = static_cast<long>(std::lround(s));
  if (total < 3600) return fmt::format("{} min {:02} s", total / 60, total % 60);
  return fmt::format("{} h {:02} min", total / 3600, (total % 3600) / 60);
}

void ProgressReporter::update(std::size_t done) {
  done_ = std::min(done, total_);
  if (!out_ || total_ == 0 || finished_) return;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_print_).count();
  if (since < (tty_ ? 0.1 : log_interval_)) return;
  last_print_ = now;
  print(false);
}

void ProgressReporter::finish() {
  if (finished_) return;
  finished_ = true;
  if (!out_ || total_ == 0) return;
  print(true);
}

void ProgressReporter::print(bool final) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double fraction = static_cast<double>(done_) / static_cast<double>(total_);
  std::string left = "estimating";
  if (done_ > 0) {
    left = "about " +
           format_duration(elapsed / static_cast<double>(done_) *
                           static_cast<double>(total_ - done_)) +
           " left";
  }
  if (tty_) {
    constexpr int width = 30;
    const int filled = static_cast<int>(fraction * width);
    fmt::print(out_, "\r{} [{}{}] {}/{} {} {:3.0f}%  {} elapsed{}\x1b[K", what_,
               std::string(static_cast<std::size_t>(filled), '#'),
               std::string(static_cast<std::size_t>(width - filled), '.'), done_, total_, unit_,
               100 * fraction, format_duration(elapsed), final ? "" : ", " + left);
    if (final) fmt::print(out_, "\n");
  } else {
    fmt::print(out_, "{}: {}/{} {} ({:.0f}%), {} elapsed{}\n", what_, done_, total_, unit_,
               100 * fraction, format_duration(elapsed), final ? ", done" : ", " + left);
  }
  std::fflush(out_);
}

}  // namespace orchid
