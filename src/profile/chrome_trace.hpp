// Timelines in Chrome's trace-event format (a JSON object with "traceEvents"), which
// Perfetto (ui.perfetto.dev) and chrome://tracing open. Each span is a complete event
// ("ph": "X") on a track named by process and thread; times are microseconds.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace orchid {

struct TraceSpan {
  std::string name;
  std::string category;  // e.g. "kernel", "compute", "transfer"
  int process = 0;       // track group (a device, the plan)
  int thread = 0;        // track inside it
  double start_us = 0;
  double duration_us = 0;
  nlohmann::json args = nlohmann::json::object();  // shown when the span is selected
};

class ChromeTrace {
 public:
  // Track names (metadata events); unnamed tracks show their numbers.
  void name_process(int process, const std::string& name);
  void name_thread(int process, int thread, const std::string& name);
  void add(TraceSpan span);
  // The whole trace; `metadata` goes under "otherData" (what was traced, units).
  std::string to_json(const nlohmann::json& metadata = nlohmann::json::object()) const;
  std::size_t spans() const { return spans_; }

 private:
  nlohmann::json events_ = nlohmann::json::array();
  std::size_t spans_ = 0;
};

// One plan execution as a timeline: kernel k ran for `kernel_us[k]` right after kernel
// k - 1 (the executor runs them one after another), named `names[k]`, with
// `details[k]` (how it ran) as an argument.
std::string kernel_timeline_trace(const std::vector<double>& kernel_us,
                                  const std::vector<std::string>& names,
                                  const std::vector<std::string>& details,
                                  const nlohmann::json& metadata);

}  // namespace orchid
