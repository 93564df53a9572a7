#include "mapping/report/mapping_trace.hpp"

#include <map>
#include <utility>

#include <fmt/format.h>

#include "profile/chrome_trace.hpp"

namespace orchid::mapping {

namespace {

constexpr int kTransfersProcess = 1;  // devices are processes 2, 3, ...
constexpr int kHost = -1;             // the host end of a transfer

const char* kind_name(Interval::Kind kind) {
  switch (kind) {
    case Interval::Kind::Compute:
      return "compute";
    case Interval::Kind::Comm:
      return "communication";
    case Interval::Kind::Weights:
      return "weights";
  }
  return "?";
}

std::string end_name(int group) {
  return group == kHost ? "host" : fmt::format("G{}", group);
}

}  // namespace

std::string mapping_trace(const Evaluator& ev, const Mapping& m, const Schedule& s) {
  const Workload& w = ev.workload();
  const System& sys = ev.system();
  ChromeTrace trace;
  trace.name_process(kTransfersProcess, "transfers");
  for (std::size_t g = 0; g < m.groups.size(); ++g) {
    for (int d = 0; d < m.groups[g].size; ++d) {
      const int dev = m.groups[g].first_device + d;
      trace.name_process(kTransfersProcess + 1 + dev,
                         fmt::format("dev{} G{} {}", dev, g, sys.designs[m.groups[g].design].id));
      trace.name_thread(kTransfersProcess + 1 + dev, 0, "work");
    }
  }
  for (std::size_t dev = 0; dev < s.devices.size(); ++dev) {
    for (const Interval& iv : s.devices[dev]) {
      const Layer& layer = w.layers[iv.layer];
      trace.add({layer.name,
                 kind_name(iv.kind),
                 kTransfersProcess + 1 + static_cast<int>(dev),
                 0,
                 iv.start * 1e6,
                 (iv.end - iv.start) * 1e6,
                 {{"layer", iv.layer},
                  {"kind", kind_name(iv.kind)},
                  {"strategy", strategy_name(s.strategy[iv.layer])}}});
    }
  }
  // Activations between groups as the evaluator charges them: sent when the producer
  // finishes; graph inputs come from the host, graph outputs go back to it.
  std::map<std::pair<int, int>, int> link_track;
  auto track = [&](int from, int to) {
    auto [it, added] = link_track.emplace(std::make_pair(from, to), link_track.size() + 1);
    if (added) {
      trace.name_thread(kTransfersProcess, it->second,
                        fmt::format("{} -> {}", end_name(from), end_name(to)));
    }
    return it->second;
  };
  const double bpe = ev.bytes_per_element();
  auto send = [&](const std::string& name, int from, int to, double start_s, double seconds,
                  double bytes) {
    if (seconds <= 0) return;
    trace.add({name,
               "transfer",
               kTransfersProcess,
               track(from, to),
               start_s * 1e6,
               seconds * 1e6,
               {{"bytes", bytes}, {"from", end_name(from)}, {"to", end_name(to)}}});
  };
  // CPU clusters: every rank holds the inputs and results stay on the ranks (no host).
  const bool host_links = sys.cpu_ranks == 0;
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    const Layer& layer = w.layers[l];
    const int g = m.group_of[l];
    const double host_gbs = ev.host_gbs(m.groups[g]);
    if (layer.preds.empty() && host_links) {
      const double bytes = layer.input_elements() * bpe;
      send(layer.name + " input", kHost, g, 0, bytes / (host_gbs * 1e9), bytes);
    }
    if (layer.succs.empty() && host_links) {
      const double bytes = layer.output_elements() * bpe;
      send(layer.name + " output", g, kHost, s.finish[l], bytes / (host_gbs * 1e9), bytes);
    }
  }
  for (const Transfer& t : s.transfers) {
    send(w.layers[t.from_layer].name + " -> " + w.layers[t.to_layer].name, t.from_group, t.to_group,
         t.start, t.end - t.start, t.bytes);
  }
  return trace.to_json({{"workload", w.name},
                        {"system", sys.name},
                        {"latency_ms", s.makespan * 1e3},
                        {"time_unit", "us"}});
}

}  // namespace orchid::mapping
