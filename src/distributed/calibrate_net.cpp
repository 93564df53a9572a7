#include "distributed/calibrate_net.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "distributed/mpi_session.hpp"
#include "distributed/plan_runner.hpp"
#include "ir/op_registry.hpp"
#include "mapping/workload_from_graph.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"

namespace orchid::distributed {

namespace {

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    fail("calibrate-net: {} failed: {}", what, std::string(text, len));
  }
}

// Median over ranks' slowest: every rank times `op` `reps` times after a barrier; the
// time of a repetition is the slowest rank's. Ranks that take no part in `op` (`idle`:
// the point-to-point pair's onlookers) wait for the others asleep, as the plan runner's
// idle ranks do: spinning in MPI beside the pair on shared cores took the pair's cores
// (4 ranks on 2 cores: 4.4 us of latency fitted, 1 us seen by the runner).
template <typename Op>
double timed(int reps, Op op, bool idle = false) {
  std::vector<double> times;
  for (int r = 0; r < reps + 2; ++r) {
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    const double t0 = MPI_Wtime();
    op();
    double local = idle ? 0 : MPI_Wtime() - t0, slowest = 0;
    MPI_Request request;
    check(MPI_Iallreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &request),
          "MPI_Iallreduce");
    for (int done = 0; !done;) {
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (!done && idle) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    if (r >= 2) times.push_back(slowest);  // two warm-up rounds
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

// A chain of `layers` fully connected layers: x[rows, width] times a constant
// width x width, each layer reading the one before.
Graph probe_graph(int layers, std::int64_t rows, std::int64_t width) {
  Graph g;
  g.name = "runner-probe";
  g.opset = 17;
  g.set_type("x", DType::F32, {rows, width});
  g.inputs.push_back("x");
  std::string prev = "x";
  for (int i = 0; i < layers; ++i) {
    const std::string weight = fmt::format("w{}", i);
    g.set_constant(weight, Tensor(DType::F32, {width, width}));
    Node n;
    n.name = fmt::format("fc{}", i);
    n.op_type = "MatMul";
    n.inputs = {prev, weight};
    n.outputs = {fmt::format("y{}", i)};
    g.nodes.push_back(n);
    infer_node_types(g, g.nodes.back());
    prev = n.outputs[0];
  }
  g.outputs = {prev};
  return g;
}

// The probe chain run by the real plan runner on one group of every rank, every layer
// split by `s`, `batch` samples per inference: rank 0 gets every rank's events.
DistributedRun run_probe(const Graph& g, mapping::Strategy s, int batch) {
  const WorldInfo world = mpi_world();
  const mapping::Workload w = mapping::extract_workload(g, batch, g.name);
  MappingPlan plan;
  plan.path = "(calibrate-net runner probe)";
  plan.workload = g.name;
  plan.batch = batch;
  plan.groups = {{"cpu:cpux1", world.size, 0}};
  for (const mapping::Layer& l : w.layers) plan.layers.push_back({l.name, 0, s, 0, 0});
  RunSettings settings;
  settings.batch = batch;
  settings.repeat = 30;
  settings.warmup_s = 0.1;
  settings.timeout_s = 60;
  std::vector<std::vector<TensorMap>> inputs(1);
  for (int b = 0; b < batch; ++b) {
    inputs[0].push_back({{"x", Tensor(DType::F32, g.tensor("x").shape)}});
  }
  return run_plan(g, w, plan, inputs, settings);
}

double median_of(std::vector<double> v) {
  if (v.empty()) internal_error("calibrate-net: the runner probe recorded no layers");
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// The plan runner's own time between two layers of a rank: a chain of tiny layers
// (x[1, 8], a microsecond each) run data-parallel, one sample per rank (the samples stay
// on the ranks and nothing moves between layers); the median gap between the end of one
// layer's computation and the start of the next on the same rank. Collective.
double runner_step_seconds() {
  const WorldInfo world = mpi_world();
  const DistributedRun run = run_probe(probe_graph(24, 1, 8), mapping::Strategy::Batch, world.size);
  double step = 0;
  if (world.rank == 0) {
    // Per rank and inference, its computations in time order.
    std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> computed;
    for (const TimedEvent& e : run.events) {
      if (e.kind == "compute") computed[{e.rank, e.inference}].push_back({e.start_s, e.end_s});
    }
    std::vector<double> gaps;
    for (auto& [key, spans] : computed) {
      std::sort(spans.begin(), spans.end());
      for (std::size_t i = 1; i < spans.size(); ++i) {
        gaps.push_back(std::max(0.0, spans[i].first - spans[i - 1].second));
      }
    }
    step = median_of(gaps);
  }
  check(MPI_Bcast(&step, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return step;
}

// What a split layer's messages take in the runner: chains of layers split by rows, one
// sample, so the leader scatters each layer's row blocks and gathers the results, over
// activations of 16 KB to 4 MB (x[R, 256]). Per size, everything the leader spends on a
// layer's messages (packing blocks, MPI, joining the results into fresh tensors, waiting
// for the members), against the bytes the evaluator counts: the (p - 1) / p of input and
// result that leave or reach it (mapping/cpu_cluster_cost.hpp). A relative least-squares
// line through them: its slope is the runner's rate, its intercept less the fitted
// point-to-point latency of the 2 (p - 1) messages the runner's fixed time per split
// layer. On a 2-core Intel Xeon VM the rate from 1 MB alone was 2.6 GB/s where the
// point-to-point fit between hot buffers says 21, and a 1.6 MB gather inside ResNet-50
// took 1.06 ms where that rate said 0.62. Collective.
struct RunnerSplitFit {
  double gbs = 0, split_us = 0;
};
RunnerSplitFit runner_split_fit(double latency_s) {
  const WorldInfo world = mpi_world();
  constexpr std::int64_t kWidth = 256;
  const int p = world.size;
  std::vector<Sample> samples;
  for (std::int64_t rows : {16, 256, 1024, 4096}) {
    const DistributedRun run =
        run_probe(probe_graph(8, rows, kWidth), mapping::Strategy::Spatial, 1);
    if (world.rank != 0) continue;
    std::map<std::pair<int, int>, double> moving;  // (inference, layer): leader's seconds
    for (const TimedEvent& e : run.events) {
      if (e.rank == 0 && (e.kind == "scatter" || e.kind == "gather")) {
        moving[{e.inference, e.layer}] += e.end_s - e.start_s;
      }
    }
    std::vector<double> per_layer;
    for (const auto& [key, seconds] : moving) per_layer.push_back(seconds);
    samples.push_back({2.0 * static_cast<double>(rows * kWidth) * 4 * (p - 1) / p,
                       std::max(1e-9, median_of(per_layer))});
  }
  RunnerSplitFit fit;
  if (world.rank == 0) {
    const AlphaBeta line = fit_alpha_beta(samples, "calibrate-net runner split messages");
    fit.gbs = line.gbs;
    fit.split_us = std::max(0.0, line.latency_us - 2.0 * (p - 1) * latency_s * 1e6);
  }
  check(MPI_Bcast(&fit.gbs, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD), "MPI_Bcast");
  check(MPI_Bcast(&fit.split_us, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return fit;
}

}  // namespace

NetworkFigures calibrate_network(const CalibrateOptions& opt) {
  const WorldInfo world = mpi_world();
  if (world.size < 2) {
    fail("calibrate-net needs at least two MPI ranks (run it under mpirun -n K), got {}",
         world.size);
  }
  std::vector<Sample> p2p, allreduce, allgather, reduce_scatter;
  std::vector<float> send, recv;
  for (double bytes = opt.min_bytes; bytes <= opt.max_bytes; bytes *= 4) {
    // Whole buffers a multiple of the rank count, so every collective splits evenly.
    const int per_rank = std::max(1, static_cast<int>(bytes / 4 / world.size));
    const int count = per_rank * world.size;
    const double real_bytes = 4.0 * count;
    send.assign(count, 1.0f);
    recv.assign(count, 0.0f);
    const double ping = timed(
        opt.reps,
        [&] {
          if (world.rank == 0) {
            check(MPI_Send(send.data(), count, MPI_FLOAT, 1, 7, MPI_COMM_WORLD), "MPI_Send");
            check(MPI_Recv(recv.data(), count, MPI_FLOAT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "MPI_Recv");
          } else if (world.rank == 1) {
            check(MPI_Recv(recv.data(), count, MPI_FLOAT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "MPI_Recv");
            check(MPI_Send(send.data(), count, MPI_FLOAT, 0, 7, MPI_COMM_WORLD), "MPI_Send");
          }
        },
        world.rank > 1);
    p2p.push_back({real_bytes, ping / 2});
    allreduce.push_back(
        {real_bytes, timed(opt.reps, [&] {
           check(MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                 "MPI_Allreduce");
         })});
    allgather.push_back({real_bytes, timed(opt.reps, [&] {
                           check(MPI_Allgather(send.data(), per_rank, MPI_FLOAT, recv.data(),
                                               per_rank, MPI_FLOAT, MPI_COMM_WORLD),
                                 "MPI_Allgather");
                         })});
    reduce_scatter.push_back({real_bytes, timed(opt.reps, [&] {
                                check(MPI_Reduce_scatter_block(send.data(), recv.data(), per_rank,
                                                               MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                                      "MPI_Reduce_scatter_block");
                              })});
  }
  NetworkFigures f;
  f.ranks = world.size;
  f.p2p = fit_alpha_beta(p2p, "calibrate-net point-to-point");
  f.allreduce = fit_alpha_beta(allreduce, "calibrate-net all-reduce");
  f.allgather = fit_alpha_beta(allgather, "calibrate-net all-gather");
  f.reduce_scatter = fit_alpha_beta(reduce_scatter, "calibrate-net reduce-scatter");
  f.runner_step_us = runner_step_seconds() * 1e6;
  const RunnerSplitFit split = runner_split_fit(f.p2p.latency_us * 1e-6);
  f.runner_gbs = split.gbs;
  f.runner_split_us = split.split_us;
  return f;
}

NetworkFigures calibrate_system_file(const std::string& path, const CalibrateOptions& opt) {
  const WorldInfo world = mpi_world();
  std::string text;
  int readable = 1;
  if (world.rank == 0) {
    std::ifstream in(path);
    readable = in ? 1 : 0;
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  // Every rank learns whether rank 0 could read the file, so all fail together.
  check(MPI_Bcast(&readable, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  if (!readable) fail("{}: cannot open system file", path);
  const NetworkFigures f = calibrate_network(opt);
  if (world.rank == 0) write_file_atomically(path, with_network_figures(text, path, f));
  return f;
}

}  // namespace orchid::distributed
