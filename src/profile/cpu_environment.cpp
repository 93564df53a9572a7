#include "profile/cpu_environment.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <fmt/format.h>

#include "util/error.hpp"

namespace orchid {

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

std::string effective_cpu_isa() {
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41:
      return "sse41";
    case dnnl_cpu_isa_avx:
      return "avx";
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx2_vnni:
      return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic:
      return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "unknown";
  }
}

std::string cpu_isa_class(const std::string& isa) {
  if (isa.rfind("avx512", 0) == 0) return "avx512";
  if (isa.rfind("avx2", 0) == 0) return "avx2";
  return "sse";
}

void set_cpu_threads(int threads) {
  if (threads < 1 || threads > 4096) {
    fail("--threads must be between 1 and 4096, got {}", threads);
  }
  omp_set_num_threads(threads);
}

int cpu_threads() {
  return omp_get_max_threads();
}

namespace {

// Tasks runnable right now, this one included (/proc/loadavg's fourth field, "r/total");
// -1 when unreadable.
int runnable_tasks() {
  std::ifstream in("/proc/loadavg");
  double a = 0, b = 0, c = 0;
  int running = -1;
  char slash = 0;
  in >> a >> b >> c >> running >> slash;
  return in && slash == '/' ? running : -1;
}

// This process's threads that are runnable (state R in /proc/self/task/*/stat): static
// initialisers may have started some before main().
int own_runnable_threads() {
  int n = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream in(task.path() / "stat");
    std::string line;
    std::getline(in, line);
    const auto close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'R') ++n;
  }
  return n;
}

constexpr const char* kSpinCount = "1000";
constexpr double kQuietBusyCores = 0.25;

}  // namespace

double busy_cores_elsewhere(int milliseconds) {
  // Sampled every 2 ms: a process spinning on a core is always runnable, a short burst
  // rarely. CPU-time counters (/proc/stat) tick every 10 ms, too coarse for a short look.
  const int samples = std::max(1, milliseconds / 2);
  double others = 0;
  for (int i = 0; i < samples; ++i) {
    const int running = runnable_tasks();
    if (running < 0) return -1;
    others += std::max(0, running - std::max(1, own_runnable_threads()));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // Cores outside this process's mask may run others without taking any of its own.
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  const double elsewhere = online > 0 ? static_cast<double>(online - available_cores()) : 0.0;
  return std::max(0.0, others / samples - std::max(0.0, elsewhere));
}

std::vector<std::pair<std::string, std::string>> wanted_openmp_environment() {
  for (const char* chosen :
       {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "ORCHID_OMP_POLICY_SET"}) {
    if (std::getenv(chosen)) return {};
  }
  // Up to three looks of 20 ms: processes starting beside this one (the other end of a
  // shell pipeline) are busy for a few tens of milliseconds, load that matters for longer.
  double busy = busy_cores_elsewhere(20);
  for (int look = 1; look < 3 && busy >= kQuietBusyCores; ++look) {
    busy = std::min(busy, busy_cores_elsewhere(20));
  }
  if (busy >= 0 && busy < kQuietBusyCores) {
    return {{"GOMP_SPINCOUNT", kSpinCount},
            {"ORCHID_OMP_POLICY_SET",
             fmt::format("spin {} then sleep ({:.2f} other processes runnable at start)",
                         kSpinCount, busy)}};
  }
  return {{"OMP_WAIT_POLICY", "PASSIVE"},
          {"KMP_BLOCKTIME", "0"},  // the same for LLVM/Intel OpenMP, should it be linked
          {"ORCHID_OMP_POLICY_SET",
           busy < 0 ? std::string("passive (/proc/stat unreadable)")
                    : fmt::format("passive ({:.2f} other processes runnable at start)", busy)}};
}

bool openmp_threads_spin() {
  if (const char* count = std::getenv("GOMP_SPINCOUNT")) return std::string(count) != "0";
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  return !policy || (std::string(policy) != "PASSIVE" && std::string(policy) != "passive");
}

std::string openmp_wait_description() {
  if (const char* mine = std::getenv("ORCHID_OMP_POLICY_SET"); mine && *mine && mine[0] != '1') {
    return mine;
  }
  std::string set;
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME"}) {
    if (const char* v = std::getenv(name))
      set += fmt::format("{}{}={}", set.empty() ? "" : " ", name, v);
  }
  return set.empty() ? "libgomp's default" : "as set: " + set;
}

}  // namespace orchid
