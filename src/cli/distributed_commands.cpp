// Commands that run across MPI ranks: `orchid calibrate-net` and `orchid run --mapping`.
// Without MPI they are registered only to say that MPI is missing.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/config_dirs.hpp"
#include "cli/report_files.hpp"
#include "cost/cost_model.hpp"
#include "cost/device_spec.hpp"
#include "ir/npy.hpp"
#include "mapping/workload.hpp"
#include "mapping/workload_from_graph.hpp"
#include "passes/load_model.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"

#ifdef ORCHID_HAVE_MPI
#include "distributed/calibrate_net.hpp"
#include "distributed/mpi_session.hpp"
#include "distributed/plan_runner.hpp"
#include "distributed/timeline_svg.hpp"
#endif

namespace orchid::cli {

namespace {

struct CalibrateNetOptions {
  std::string system;
  double max_bytes = 16 << 20;
  int reps = 20;
};

void calibrate_net(const CalibrateNetOptions& o) {
#ifdef ORCHID_HAVE_MPI
  distributed::CalibrateOptions opt;
  opt.max_bytes = o.max_bytes;
  opt.reps = o.reps;
  const distributed::NetworkFigures f = distributed::calibrate_system_file(o.system, opt);
  if (distributed::mpi_world().rank != 0) return;
  auto line = [](const char* what, const distributed::AlphaBeta& ab) {
    fmt::print("{:15s} latency {:9.2f} us   bandwidth {:8.3f} GB/s   fit rms error {:.1f} %\n",
               what, ab.latency_us, ab.gbs, ab.rms_relative_error * 100);
  };
  fmt::print("ranks          {}\n", f.ranks);
  line("point-to-point", f.p2p);
  line("all-reduce", f.allreduce);
  line("all-gather", f.allgather);
  line("reduce-scatter", f.reduce_scatter);
  fmt::print("runner step     {:9.2f} us per layer\n", f.runner_step_us);
  fmt::print(
      "runner split    {:9.3f} GB/s for a split layer's messages, {:.2f} us fixed per layer\n",
      f.runner_gbs, f.runner_split_us);
  fmt::print("wrote          {}\n", o.system);
#else
  fail(
      "calibrate-net: this orchid was built without MPI (install libopenmpi-dev and rebuild; "
      "system file '{}' not changed)",
      o.system);
#endif
}

#ifdef ORCHID_HAVE_MPI
// Measured events next to the plan's predicted layer intervals.
std::string timeline_json(const distributed::MappingPlan& plan,
                          const distributed::DistributedRun& run, const mapping::Workload& w) {
  nlohmann::json j;
  j["plan"] = plan.path;
  j["predicted_latency_s"] = plan.latency_s;
  j["measured_latency_s"] = run.latency_s;
  j["measured_round_s"] = run.round_seconds;
  j["predicted"] = nlohmann::json::array();
  for (std::size_t l = 0; l < plan.layers.size(); ++l) {
    j["predicted"].push_back({{"layer", w.layers[l].name},
                              {"group", plan.layers[l].group},
                              {"sharding", mapping::strategy_name(plan.layers[l].sharding)},
                              {"start_s", plan.layers[l].start_s},
                              {"end_s", plan.layers[l].finish_s}});
  }
  j["measured"] = nlohmann::json::array();
  for (const distributed::TimedEvent& e : run.events) {
    j["measured"].push_back({{"rank", e.rank},
                             {"layer", e.layer >= 0 ? w.layers[e.layer].name : ""},
                             {"inference", e.inference},
                             {"kind", e.kind},
                             {"how", e.how},
                             {"start_s", e.start_s},
                             {"end_s", e.end_s},
                             {"bytes", e.bytes},
                             {"cpu_s", e.cpu_s}});
  }
  return j.dump(1) + "\n";
}
#endif

}  // namespace

void add_distributed_run_options(CLI::App& run, DistributedRunOptions& o) {
  run.add_option("--mapping", o.mapping,
                 "Run a plan from `orchid map MODEL --json` across MPI ranks (under mpirun)");
  run.add_option("--batch", o.batch, "With --mapping: samples per inference (default: the plan's)");
  run.add_option("--stream", o.stream, "With --mapping: inferences pipelined through the groups")
      ->check(CLI::PositiveNumber);
  run.add_option("--timeline", o.timeline,
                 "With --mapping: write measured and predicted timelines (JSON)");
  run.add_option("--gantt", o.gantt,
                 "With --mapping: SVG Gantt chart, predicted and measured rows per rank");
  run.add_flag("--check", o.check,
               "With --mapping: compare every output with the reference interpreter");
  run.add_option("--timeout", o.timeout_s, "With --mapping: longest wait for one message (s)");
  run.add_flag("--reference-kernels", o.reference_kernels,
               "With --mapping: run layers on the reference kernels instead of the CPU executor");
}

void run_mapping_plan(const ModelOptions& model, const std::vector<std::string>& input_specs,
                      std::uint64_t seed, const std::string& save_outputs,
                      const DistributedRunOptions& o) {
#ifdef ORCHID_HAVE_MPI
  try {
    const distributed::MappingPlan plan = distributed::read_mapping_plan(o.mapping);
    const int batch = o.batch > 0 ? o.batch : static_cast<int>(plan.batch);
    const LoadedModel loaded = load_model(model.model, model.import_options());
    const Graph& g = loaded.graph;
    g.require_static_shapes("distributed execution");
    const mapping::Workload w =
        mapping::extract_workload(g, batch, std::filesystem::path(model.model).stem().string());
    // Inference i, sample b: its own random inputs (seed + i * batch + b), --input files
    // replacing them for every sample.
    std::vector<std::vector<TensorMap>> inputs(o.stream);
    for (int i = 0; i < o.stream; ++i) {
      for (int b = 0; b < batch; ++b) {
        inputs[i].push_back(
            make_feed(g, input_specs, seed + static_cast<std::uint64_t>(i * batch + b)));
      }
    }
    distributed::RunSettings settings;
    settings.batch = batch;
    settings.stream = o.stream;
    settings.repeat = o.repeat;
    settings.timeout_s = o.timeout_s;
    // Threads per rank: the CPU design's id ends in "x<threads>" (system [devices.cpu]).
    const std::string& design = plan.groups[0].design;
    if (const auto x = design.rfind('x'); design.starts_with("cpu:") && x != std::string::npos) {
      settings.threads = std::max(1, std::atoi(design.c_str() + x + 1));
    }
    std::unique_ptr<CostModel> cpu_model;
    if (!o.reference_kernels) {
      cpu_model = make_analytic_cost_model(load_device_spec("cpu", config_roots()));
      settings.cpu_model = cpu_model.get();
    }
    const distributed::DistributedRun run = distributed::run_plan(g, w, plan, inputs, settings);
    if (distributed::mpi_world().rank != 0) return;
    // The text report and the same figures as JSON (--json; docs/json_output.md).
    std::string text;
    nlohmann::json report;
    text +=
        fmt::format("model    {}  (mapping plan {}: {} groups on {} ranks, batch {}, stream {})\n",
                    model.model, o.mapping, plan.groups.size(), plan.devices(), batch, o.stream);
    report["model"] = model.model;
    report["mapping"] = o.mapping;
    report["groups"] = plan.groups.size();
    report["ranks"] = plan.devices();
    report["threads_per_rank"] = settings.threads;
    report["batch"] = batch;
    report["stream"] = o.stream;
    report["engine"] = o.reference_kernels ? "reference" : "cpu";
    report["outputs"] = nlohmann::json::array();
    for (const std::string& name : g.outputs) {
      const Tensor& t = run.outputs[0][0].at(name);
      double sum = 0;
      for (std::int64_t k = 0; k < t.numel(); ++k) sum += t.get_as_double(k);
      text += fmt::format("output   {}  {} {}  sum {:.6g}\n", name, dtype_name(t.dtype()),
                          shape_to_string(t.shape()), sum);
      report["outputs"].push_back(
          {{"name", name}, {"dtype", dtype_name(t.dtype())}, {"shape", t.shape()}, {"sum", sum}});
    }
    // Latency: the median inference of the timed rounds (after the untimed ones);
    // throughput: the median round's stream.
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    double mean = 0;
    for (double l : run.latency_s) mean += l / run.latency_s.size();
    const double latency = median(run.latency_s);
    const double round_s = median(run.round_seconds);
    const int inferences = static_cast<int>(run.latency_s.size());
    text += fmt::format(
        "latency  measured {:.3f} ms (median of {} inference(s) after {} warm-up round(s)), "
        "{:.3f} ms mean; predicted {:.3f} ms\n",
        latency * 1e3, inferences, run.warmup_rounds, mean * 1e3, plan.latency_s * 1e3);
    text += fmt::format("stream   {} inferences in {:.3f} ms{}: {:.2f} inferences/s\n", o.stream,
                        round_s * 1e3, o.repeat > 1 ? " (median round)" : "", o.stream / round_s);
    report["latency_ms"] = {
        {"predicted", plan.latency_s * 1e3},
        {"first", run.latency_s[0] * 1e3},
        {"mean", mean * 1e3},
        {"median", latency * 1e3},
        {"min", *std::min_element(run.latency_s.begin(), run.latency_s.end()) * 1e3},
        {"each", nlohmann::json::array()}};
    for (double l : run.latency_s) report["latency_ms"]["each"].push_back(l * 1e3);
    report["repeat"] = o.repeat;
    report["warmup_rounds"] = run.warmup_rounds;
    report["stream_ms"] = round_s * 1e3;
    report["inferences_per_s"] = o.stream / round_s;
    // How much of its compute time each rank had a core: well below 1 when other
    // processes (or more ranks than cores) share the machine. Compute and waiting
    // (collectives, receives) per rank say where measured time went.
    double wall = 0, cpu = 0;
    std::vector<double> compute_s(plan.devices(), 0), wait_s(plan.devices(), 0);
    for (const distributed::TimedEvent& e : run.events) {
      if (e.rank < 0 || e.rank >= plan.devices()) continue;
      if (e.kind == "compute") {
        if (e.cpu_s >= 0) wall += e.end_s - e.start_s, cpu += e.cpu_s;
        compute_s[e.rank] += e.end_s - e.start_s;
      } else if (e.kind != "send") {
        wait_s[e.rank] += e.end_s - e.start_s;
      }
    }
    // Only computations of 100 us or more read the CPU clock (plan_runner.hpp).
    if (wall > 0) {
      text += fmt::format("cpu      share of compute time on a core {:.2f}\n", cpu / wall);
      report["cpu_share"] = cpu / wall;
    } else {
      text += "cpu      share of compute time not read (no computation of 100 us or more)\n";
      report["cpu_share"] = nullptr;
    }
    report["per_rank"] = nlohmann::json::array();
    for (int r = 0; r < plan.devices(); ++r) {
      report["per_rank"].push_back(
          {{"rank", r},
           {"compute_ms_per_inference", compute_s[r] * 1e3 / inferences},
           {"communication_ms_per_inference", wait_s[r] * 1e3 / inferences}});
    }
    double load[3] = {0, 0, 0};
    if (getloadavg(load, 3) == 3) report["load_average"] = {load[0], load[1], load[2]};
    bool out_of_tolerance = false;
    double worst = 0;
    if (o.check) {
      // The single-process reference interpreter on the same inputs.
      ReferenceInterpreter reference(g);
      double worst_ratio = 0;
      bool identical = true;
      for (int i = 0; i < o.stream; ++i) {
        for (int b = 0; b < batch; ++b) {
          const TensorMap ref = reference.run(inputs[i][b]);
          for (const std::string& name : g.outputs) {
            const Tensor& a = run.outputs[i][b].at(name);
            const Tensor& r = ref.at(name);
            identical = identical && a == r;
            for (std::int64_t k = 0; k < r.numel(); ++k) {
              const double d = std::fabs(a.get_as_double(k) - r.get_as_double(k));
              worst = std::max(worst, d);
              worst_ratio =
                  std::max(worst_ratio, d / (1e-4 + 1e-3 * std::fabs(r.get_as_double(k))));
            }
          }
        }
      }
      text += fmt::format("check    max |distributed - reference| {:.3g}, bit-identical {}\n",
                          worst, identical ? "yes" : "no");
      out_of_tolerance = worst_ratio > 1;
      report["check"] = {{"max_abs_diff", worst},
                         {"bit_identical", identical},
                         {"tolerance", "|d| <= 1e-4 + 1e-3 |ref|"},
                         {"within_tolerance", !out_of_tolerance}};
    }
    if (!save_outputs.empty()) {
      cli::save_outputs(save_outputs, g.outputs, run.outputs[0][0]);
      report["saved_outputs"] = save_outputs;
    }
    if (!is_stdout(o.json)) fmt::print("{}", text);
    if (!o.json.empty()) write_report_files({{o.json, report.dump(2) + "\n"}});
    if (out_of_tolerance) {
      fail(
          "--check: outputs differ from the reference interpreter beyond |d| <= 1e-4 + 1e-3 "
          "|ref| (max |d| {:.3g})",
          worst);
    }
    if (!o.timeline.empty()) write_file_atomically(o.timeline, timeline_json(plan, run, w));
    if (!o.gantt.empty()) write_file_atomically(o.gantt, distributed::timeline_svg(plan, run, w));
  } catch (const distributed::AgreedError& e) {
    throw Error(fmt::format("rank {}: {}", distributed::mpi_world().rank, e.what()));
  } catch (const Error& e) {
    // A failure on one rank must not leave the others waiting for it.
    distributed::abort_all_ranks(e.what());
  }
#else
  (void)model, (void)input_specs, (void)seed, (void)save_outputs;
  fail("--mapping '{}': this orchid was built without MPI (install libopenmpi-dev and rebuild)",
       o.mapping);
#endif
}

Action add_calibrate_net_command(CLI::App& app) {
  auto options = std::make_shared<CalibrateNetOptions>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate-net",
      "Measure MPI point-to-point and collective costs (run under mpirun) and write the fitted "
      "figures into a system file");
  cmd->add_option("--system", options->system, "system file to update (configs/systems/*.toml)")
      ->required();
  cmd->add_option("--max-bytes", options->max_bytes, "largest message size measured");
  cmd->add_option("--reps", options->reps, "timed repetitions per message size");
  return [options]() {
    try {
      calibrate_net(*options);
    } catch (const Error& e) {
#ifdef ORCHID_HAVE_MPI
      // A failure on one rank must not leave the others waiting in a collective.
      distributed::abort_all_ranks(e.what());
#else
      throw;
#endif
    }
  };
}

}  // namespace orchid::cli
