// Measures the figures configs/devices/cpu.toml records for this machine: achievable
// DRAM bandwidth (a STREAM-triad-like loop over arrays far larger than the last-level
// cache) and achievable FP32 throughput (an FMA loop with independent accumulators, and
// OpenBLAS sgemm when the build found it). Every figure is the best of several short
// runs: the machine is shared, so the best run is the one least disturbed by others.
//
//   orchid_measure_cpu [--threads N] [--runs R] [--mib M]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#ifdef ORCHID_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs fn(thread_index) on `threads` threads and returns the wall time in seconds.
template <typename Fn>
double timed_parallel(int threads, Fn fn) {
  std::vector<std::thread> pool;
  const auto start = Clock::now();
  for (int t = 0; t < threads; ++t) pool.emplace_back(fn, t);
  for (auto& th : pool) th.join();
  return seconds_since(start);
}

// a[i] = b[i] + s * c[i]; counts 3 streams of 4 bytes per element (STREAM convention:
// the write-allocate read of `a` is not counted).
double triad_gbs(std::size_t n, int threads, int runs) {
  std::vector<float> a(n), b(n), c(n);
  // First touch from the threads that will use each chunk.
  const std::size_t chunk = n / static_cast<std::size_t>(threads);
  timed_parallel(threads, [&](int t) {
    const std::size_t lo = chunk * static_cast<std::size_t>(t);
    const std::size_t hi = t + 1 == threads ? n : lo + chunk;
    for (std::size_t i = lo; i < hi; ++i) {
      a[i] = 0.0f;
      b[i] = 1.0f;
      c[i] = 2.0f;
    }
  });
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    const float s = 0.5f + static_cast<float>(r);
    const double sec = timed_parallel(threads, [&](int t) {
      const std::size_t lo = chunk * static_cast<std::size_t>(t);
      const std::size_t hi = t + 1 == threads ? n : lo + chunk;
      float* __restrict pa = a.data();
      const float* __restrict pb = b.data();
      const float* __restrict pc = c.data();
      for (std::size_t i = lo; i < hi; ++i) pa[i] = pb[i] + s * pc[i];
    });
    best = std::min(best, sec);
  }
  volatile float sink = a[n / 2];  // keep the stores observable
  (void)sink;
  return 3.0 * 4.0 * static_cast<double>(n) / best / 1e9;
}

// 8-wide float vectors: with -mfma the compiler turns x = x * m + k into vfmadd.
typedef float v8 __attribute__((vector_size(32)));

// FMA chains: 12 independent accumulators hide the 4-cycle FMA latency on 2 pipes.
double fma_gflops_one_thread(std::int64_t iters, float seed) {
  constexpr int kAcc = 12;
  v8 acc[kAcc];
  for (int j = 0; j < kAcc; ++j) {
    for (int l = 0; l < 8; ++l) acc[j][l] = seed + static_cast<float>(j * 8 + l) * 1e-3f;
  }
  v8 m, k;
  for (int l = 0; l < 8; ++l) {
    m[l] = 0.999999f;
    k[l] = 1e-7f;
  }
  for (std::int64_t i = 0; i < iters; ++i) {
    for (int j = 0; j < kAcc; ++j) acc[j] = acc[j] * m + k;
  }
  float sum = 0;
  for (int j = 0; j < kAcc; ++j) {
    for (int l = 0; l < 8; ++l) sum += acc[j][l];
  }
  return static_cast<double>(sum);
}

double fma_gflops(int threads, int runs) {
  constexpr std::int64_t kIters = 20'000'000;
  double best = 1e30;
  std::vector<double> sinks(static_cast<std::size_t>(threads));
  for (int r = 0; r < runs; ++r) {
    const double sec = timed_parallel(threads, [&](int t) {
      sinks[static_cast<std::size_t>(t)] =
          fma_gflops_one_thread(kIters, 1.0f + static_cast<float>(t));
    });
    best = std::min(best, sec);
  }
  double total = 0;
  for (double s : sinks) total += s;
  if (total == 12345.0) std::printf("#");  // use the results
  const double flops = 2.0 * 8.0 * 12.0 * static_cast<double>(kIters) * threads;
  return flops / best / 1e9;
}

#ifdef ORCHID_HAVE_OPENBLAS
double sgemm_gflops(int n, int threads, int runs) {
  openblas_set_num_threads(threads);
  std::vector<float> a(static_cast<std::size_t>(n) * n, 1.0f), b(a.size(), 0.5f), c(a.size());
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
              0.0f, c.data(), n);  // warm-up: thread pool, page faults
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    const auto start = Clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    best = std::min(best, seconds_since(start));
  }
  return 2.0 * n * static_cast<double>(n) * n / best / 1e9;
}
#endif

int int_arg(int argc, char** argv, const char* flag, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = std::max(1, int_arg(argc, argv, "--threads", hw));
  const int runs = std::max(1, int_arg(argc, argv, "--runs", 5));
  // 3 arrays of 128 MiB each by default: 12x a 32 MiB L3.
  const auto mib = static_cast<std::size_t>(std::max(8, int_arg(argc, argv, "--mib", 128)));
  const std::size_t n = mib * 1024 * 1024 / sizeof(float);

  std::printf("threads %d, runs %d (best of), triad arrays %zu MiB each\n", threads, runs, mib);
  std::printf("triad_1_thread_gbs   %.1f\n", triad_gbs(n, 1, runs));
  std::printf("triad_gbs            %.1f\n", triad_gbs(n, threads, runs));
  std::printf("fma_1_thread_gflops  %.1f\n", fma_gflops(1, runs));
  std::printf("fma_gflops           %.1f\n", fma_gflops(threads, runs));
#ifdef ORCHID_HAVE_OPENBLAS
  std::printf("sgemm_1024_gflops    %.1f\n", sgemm_gflops(1024, threads, runs));
  std::printf("sgemm_2048_gflops    %.1f\n", sgemm_gflops(2048, threads, runs));
#else
  std::printf("sgemm: OpenBLAS not found at configure time\n");
#endif
  return 0;
}
