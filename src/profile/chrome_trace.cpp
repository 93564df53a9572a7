#include "profile/chrome_trace.hpp"

#include "util/error.hpp"

namespace orchid {

void ChromeTrace::name_process(int process, const std::string& name) {
  events_.push_back({{"name", "process_name"},
                     {"ph", "M"},
                     {"pid", process},
                     {"tid", 0},
                     {"args", {{"name", name}}}});
  // Keeps tracks in the order they were named rather than alphabetical.
  events_.push_back({{"name", "process_sort_index"},
                     {"ph", "M"},
                     {"pid", process},
                     {"tid", 0},
                     {"args", {{"sort_index", process}}}});
}

void ChromeTrace::name_thread(int process, int thread, const std::string& name) {
  events_.push_back({{"name", "thread_name"},
                     {"ph", "M"},
                     {"pid", process},
                     {"tid", thread},
                     {"args", {{"name", name}}}});
}

void ChromeTrace::add(TraceSpan span) {
  if (!(span.duration_us >= 0) || !(span.start_us >= 0)) {
    internal_error("trace span '{}' has start {} us and duration {} us", span.name, span.start_us,
                   span.duration_us);
  }
  events_.push_back({{"name", std::move(span.name)},
                     {"cat", std::move(span.category)},
                     {"ph", "X"},
                     {"pid", span.process},
                     {"tid", span.thread},
                     {"ts", span.start_us},
                     {"dur", span.duration_us},
                     {"args", std::move(span.args)}});
  ++spans_;
}

std::string ChromeTrace::to_json(const nlohmann::json& metadata) const {
  const nlohmann::json doc = {
      {"traceEvents", events_}, {"displayTimeUnit", "ms"}, {"otherData", metadata}};
  return doc.dump(1) + "\n";
}

std::string kernel_timeline_trace(const std::vector<double>& kernel_us,
                                  const std::vector<std::string>& names,
                                  const std::vector<std::string>& details,
                                  const nlohmann::json& metadata) {
  if (names.size() != kernel_us.size() || details.size() != kernel_us.size()) {
    internal_error("kernel trace: {} times, {} names, {} details", kernel_us.size(), names.size(),
                   details.size());
  }
  ChromeTrace trace;
  trace.name_process(1, "plan");
  trace.name_thread(1, 1, "kernels");
  double t = 0;
  for (std::size_t k = 0; k < kernel_us.size(); ++k) {
    trace.add(
        {names[k], "kernel", 1, 1, t, kernel_us[k], {{"kernel", k}, {"runs as", details[k]}}});
    t += kernel_us[k];
  }
  return trace.to_json(metadata);
}

}  // namespace orchid
