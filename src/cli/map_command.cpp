// `orchid map WORKLOAD --system SYSTEM.toml`: map one inference onto a multi-accelerator
// system with the two-level GA and compare it with the baselines on the same model.
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/config_dirs.hpp"
#include "cli/option_checks.hpp"
#include "mapping/mapping_run.hpp"
#include "mapping/report/gantt_svg.hpp"
#include "mapping/report/mapping_trace.hpp"
#include "util/atomic_file.hpp"

namespace orchid::cli {

namespace {

struct MapOptions {
  std::string workload;
  std::string system;
  std::int64_t batch = 1;
  std::uint64_t seed = 1;
  std::string json;
  std::string gantt;
  std::string trace;
  int generations = 150;
  int population = 40;
  int threads = 0;
  double time_limit = 25;
  bool quiet = false;
  bool gpu_roofline = false;
  ModelOptions shapes;  // --shape / --dim of an .onnx workload
};

std::string reduction(double base, double ours) {
  return fmt::format("{:+.1f} %", (ours - base) / base * 100);
}

// GA progress goes to stderr, never into the report on stdout: every line on a terminal;
// in a log or pipe only a line each 10 s, so a long search shows it is alive and a short
// one prints nothing.
mapping::ProgressFn progress_on_stderr() {
  const bool tty = isatty(fileno(stderr)) != 0;
  using Clock = std::chrono::steady_clock;
  auto last = std::make_shared<Clock::time_point>(Clock::now());
  return [tty, last](const std::string& line) {
    const Clock::time_point now = Clock::now();
    if (!tty && now - *last < std::chrono::seconds(10)) return;
    *last = now;
    fmt::print(stderr, "  {}\n", line);
  };
}

void map(const MapOptions& o, const CLI::App& cmd) {
  using namespace orchid::mapping;
  MappingRequest request;
  request.workload = o.workload;
  request.import = o.shapes.import_options();
  request.system = o.system;
  request.batch = o.batch;
  request.search.seed = o.seed;
  request.search.generations = o.generations;
  request.search.population = o.population;
  request.search.threads = o.threads;
  request.search.time_limit_s = o.time_limit;
  request.gpu_roofline = o.gpu_roofline;
  MappingRun run(request, config_roots());
  const System& sys = run.system();
  refuse_unless(cmd, "--gpu-roofline", !sys.gpu_designs.empty(),
                fmt::format("system '{}' has no GPU", sys.name));
  const Workload& w = run.workload();
  const Evaluator& ev = run.evaluator();
  std::size_t kinds[kLayerKinds] = {};
  for (const Layer& l : w.layers) ++kinds[static_cast<int>(l.kind)];
  fmt::print(
      "workload     {}  ({} layers: {} conv, {} fc, {} matmul, {} lstm, {} cheap; batch {})\n",
      w.name, w.layers.size(), kinds[0], kinds[1], kinds[2], kinds[3], kinds[4], w.batch);
  if (sys.cpu_ranks > 0) {
    fmt::print("system       {}  ({} MPI ranks x {} threads on the CPU executor; GB/s {})\n",
               sys.name, sys.cpu_ranks, sys.designs[0].threads, sys.intra_group_gbs);
  } else {
    fmt::print(
        "system       {}  ({} FPGA + {} GPU devices, {} designs; GB/s intra {} inter {} host "
        "{}{})\n",
        sys.name, sys.fpga_devices, sys.gpu_designs.size(), sys.designs.size(), sys.intra_group_gbs,
        sys.inter_group_gbs, sys.host_gbs,
        sys.links.empty() && sys.device_host_gbs.empty()
            ? ""
            : fmt::format("; topology: {} links{}", sys.links.size(),
                          sys.device_host_gbs.empty() ? "" : ", host link per device"));
  }
  if (const MeasuredCpuCostProvider* measured = run.measured()) {
    const MeasuredCpuCostStats st = measured->stats();
    fmt::print(
        "cpu costing  measured on the CPU executor ({} threads per rank): {} layer shards timed "
        "alone, then in {} rounds in context ({} layers as the plan runner runs them; x{:.2f} "
        "their times alone), {} memo hits, {} roofline fallbacks, {:.2f} s\n",
        sys.designs[0].threads, st.measured, st.context_rounds, st.runner_programs,
        st.alone_sum_s > 0 ? st.context_sum_s / st.alone_sum_s : 0.0, st.memo_hits, st.fallbacks,
        st.seconds);
    if (st.fallbacks > 0) fmt::print("  fallback   {}\n", st.first_fallback);
  }
  if (run.orchestrates_gpus()) {
    const OrchestratedCostStats st = run.orchestrated().stats();
    fmt::print(
        "gpu costing  kernel orchestrator: {} layer subgraphs orchestrated, {} memo hits, {} "
        "roofline fallbacks, {:.2f} s\n",
        st.layers_orchestrated, st.memo_hits, st.fallbacks, st.seconds);
    for (const std::string& n : st.fallback_notes) fmt::print("  fallback   {}\n", n);
  } else if (!sys.gpu_designs.empty()) {
    fmt::print("gpu costing  roofline (--gpu-roofline)\n");
  }
  // Baselines first: their plans seed the search, so it is never worse than any of them.
  ProgressFn progress;
  if (!o.quiet) progress = progress_on_stderr();
  run.search(progress);
  const SearchResult& r = run.result();
  const Schedule& s = run.schedule();
  const std::vector<BaselineResult>& baselines = run.baselines();

  fmt::print("groups\n");
  std::vector<int> per_group(r.mapping.groups.size(), 0);
  for (int g : r.mapping.group_of) ++per_group[g];
  for (std::size_t g = 0; g < r.mapping.groups.size(); ++g) {
    const Group& grp = r.mapping.groups[g];
    fmt::print("  G{}  {:2d} x {:16s} devices {}-{}  {} layers\n", g, grp.size,
               sys.designs[grp.design].id, grp.first_device, grp.first_device + grp.size - 1,
               per_group[g]);
  }
  fmt::print("placement (runs of consecutive layers)\n");
  for (std::size_t a = 0; a < w.layers.size();) {
    std::size_t b = a;
    while (b + 1 < w.layers.size() && r.mapping.group_of[b + 1] == r.mapping.group_of[a] &&
           s.strategy[b + 1] == s.strategy[a]) {
      ++b;
    }
    fmt::print("  {:4d}-{:<4d} {:>24s} .. {:<24s} G{} {}\n", a, b, w.layers[a].name.substr(0, 24),
               w.layers[b].name.substr(0, 24), r.mapping.group_of[a], strategy_name(s.strategy[a]));
    a = b + 1;
  }
  if (!s.feasible) fmt::print("warning      plan infeasible: {}\n", s.problem);
  fmt::print("latency      plan {:.4f} ms\n", s.makespan * 1e3);
  for (const BaselineResult& b : baselines) {
    if (!b.available) {
      fmt::print("baseline     {:14s} n/a ({})\n", b.name, b.note);
      continue;
    }
    fmt::print("baseline     {:14s} {:.4f} ms   plan vs it {}{}\n", b.name, b.latency * 1e3,
               reduction(b.latency, s.makespan), b.note.empty() ? "" : "   (" + b.note + ")");
  }
  const double lb = ev.lower_bound();
  fmt::print("lower bound  {:.4f} ms   gap {:.1f} %", lb * 1e3, (s.makespan - lb) / lb * 100);
  if (baselines[1].available) {
    fmt::print("   (data-parallel's gap {:.1f} %)", (baselines[1].latency - lb) / lb * 100);
  }
  fmt::print("\n");
  fmt::print(
      "search time  {:.2f} s   ({} generations, {} placements sharded, {} memo hits, {} local "
      "moves{})\n",
      r.seconds, r.generations, r.inner_runs, r.memo_hits, r.local_moves,
      run.winning_seed().empty()
          ? ""
          : fmt::format("; best is the {} baseline's plan", run.winning_seed()));
  // Both files or neither: contents first, then one atomic step.
  std::vector<std::pair<std::string, std::string>> files;
  if (!o.json.empty()) {
    files.emplace_back(o.json, run.to_json());
  }
  if (!o.gantt.empty()) files.emplace_back(o.gantt, gantt_svg(ev, r.mapping, s));
  if (!o.trace.empty()) files.emplace_back(o.trace, mapping_trace(ev, r.mapping, s));
  write_files_atomically(files);
}

}  // namespace

Action add_map_command(CLI::App& app) {
  auto options = std::make_shared<MapOptions>();
  CLI::App* cmd = app.add_subcommand(
      "map", "Map a workload onto a multi-accelerator system (two-level GA vs baselines)");
  cmd->option_defaults()->always_capture_default();  // --help shows every default
  cmd->add_option("workload", options->workload, ".onnx file, case file or benchmark case name")
      ->required();
  cmd->add_option("--system", options->system,
                  "system: a name in configs/systems (fpga4) or a .toml path")
      ->required();
  cmd->add_option("--batch", options->batch, "batch size of the inference")
      ->check(in_range(1, 1 << 20));
  add_shape_options(*cmd, options->shapes);
  cmd->add_option("--seed", options->seed, "random seed of the search");
  cmd->add_option("--json", options->json, "write the plan as JSON");
  cmd->add_option("--gantt", options->gantt, "write an SVG Gantt chart of the plan");
  cmd->add_option("--trace", options->trace,
                  "write the plan's per-device compute and transfers as a Chrome trace "
                  "(Perfetto, chrome://tracing)");
  cmd->add_option("--generations", options->generations, "outer GA generations")
      ->check(in_range(1, 1e6));
  cmd->add_option("--population", options->population, "outer GA population")
      ->check(in_range(2, 1e5));
  cmd->add_option("--threads", options->threads, "evaluation threads (0 = all cores)")
      ->check(in_range(0, kMaxThreads));
  cmd->add_option("--time-limit", options->time_limit, "stop the search after this many seconds")
      ->check(in_range(0.001, 1e6));
  cmd->add_flag("--quiet", options->quiet,
                "no search progress on stderr (shown on a terminal, or every 10 s of a long "
                "search)");
  cmd->add_flag("--gpu-roofline", options->gpu_roofline,
                "price GPU layers by the roofline instead of the kernel orchestrator");
  return [options, cmd]() { map(*options, *cmd); };
}

}  // namespace orchid::cli
