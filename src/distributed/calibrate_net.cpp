#include "distributed/calibrate_net.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "distributed/mpi_session.hpp"
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
