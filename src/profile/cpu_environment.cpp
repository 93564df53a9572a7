#include "profile/cpu_environment.hpp"

#include <dlfcn.h>
#include <malloc.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
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

// CPU time (clock ticks) spent on the cores of this process's affinity mask, idle, iowait
// and steal excluded (/proc/stat's per-core lines); -1 when unreadable.
double busy_ticks_on_own_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  std::ifstream in("/proc/stat");
  std::string line;
  double busy = 0;
  bool any = false;
  while (std::getline(in, line)) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || !std::isdigit(line[3])) continue;
    std::istringstream fields(line.substr(3));
    int cpu = -1;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
    fields >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq;
    if (!fields || cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set)) continue;
    busy += user + nice + system + irq + softirq;
    any = true;
  }
  return any ? busy : -1;
}

// This process's CPU time in clock ticks (/proc/self/stat: utime + stime); -1 when
// unreadable.
double own_ticks() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  std::getline(in, line);
  const auto close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  double utime = -1, stime = -1;
  for (int i = 3; i <= 15 && fields >> field; ++i) {  // fields 14 and 15 (1-based)
    if (i == 14) utime = std::atof(field.c_str());
    if (i == 15) stime = std::atof(field.c_str());
  }
  return utime < 0 || stime < 0 ? -1 : utime + stime;
}

constexpr const char* kSpinCount = "100000";
constexpr double kQuietBusyCores = 0.25;
constexpr int kLookMs = 50;

}  // namespace

double busy_cores_elsewhere(int milliseconds) {
  // CPU time others spent on this process's cores, not how many tasks were runnable:
  // a VM's kernel threads (kdamond, say) often show as runnable while using nothing,
  // which made a quiet machine look busy and the threads sleep at once (MobileNetV2
  // 2.9 -> 6-7 ms, two threads no faster than one).
  const auto start = std::chrono::steady_clock::now();
  const double busy0 = busy_ticks_on_own_cores(), own0 = own_ticks();
  std::this_thread::sleep_for(std::chrono::milliseconds(std::max(1, milliseconds)));
  const double busy1 = busy_ticks_on_own_cores(), own1 = own_ticks();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const long hz = sysconf(_SC_CLK_TCK);
  if (busy0 < 0 || busy1 < 0 || own0 < 0 || own1 < 0 || hz <= 0 || seconds <= 0) return -1;
  return std::max(0.0, ((busy1 - busy0) - (own1 - own0)) / (seconds * static_cast<double>(hz)));
}

void keep_blas_single_threaded() {
  if (std::getenv("OPENBLAS_NUM_THREADS")) return;  // the user's choice (or orchid's, 1)
  void* blas = dlopen("libopenblas.so.0", RTLD_LAZY | RTLD_NOLOAD);
  if (blas == nullptr) return;
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(blas, "openblas_set_num_threads"))) set(1);
  dlclose(blas);
}

void return_large_blocks_to_the_system() {
  for (const char* tuned : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_"}) {
    if (std::getenv(tuned)) return;
  }
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables && std::strstr(tunables, "glibc.malloc.")) return;
  constexpr int kThresholdBytes = 1 << 20;
  mallopt(M_MMAP_THRESHOLD, kThresholdBytes);
}

namespace {

// The wait policy libgomp should load with: empty when the user chose one.
std::vector<std::pair<std::string, std::string>> wanted_wait_policy() {
  for (const char* chosen :
       {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "ORCHID_OMP_POLICY_SET"}) {
    if (std::getenv(chosen)) return {};
  }
  // Up to three looks of 50 ms (clock ticks are 10 ms): processes starting beside this
  // one (the other end of a shell pipeline) are busy for a few tens of milliseconds, load
  // that matters for longer.
  double busy = busy_cores_elsewhere(kLookMs);
  for (int look = 1; look < 3 && busy >= kQuietBusyCores; ++look) {
    busy = std::min(busy, busy_cores_elsewhere(kLookMs));
  }
  if (busy >= 0 && busy < kQuietBusyCores) {
    return {{"GOMP_SPINCOUNT", kSpinCount},
            {"ORCHID_OMP_POLICY_SET",
             fmt::format("spin {} then sleep ({:.2f} of its cores busy with other processes "
                         "at start)",
                         kSpinCount, busy)}};
  }
  return {{"OMP_WAIT_POLICY", "PASSIVE"},
          {"KMP_BLOCKTIME", "0"},  // the same for LLVM/Intel OpenMP, should it be linked
          {"ORCHID_OMP_POLICY_SET",
           busy < 0 ? std::string("passive (/proc/stat unreadable)")
                    : fmt::format("passive ({:.2f} of its cores busy with other processes at "
                                  "start)",
                                  busy)}};
}

}  // namespace

std::vector<std::pair<std::string, std::string>> wanted_openmp_environment() {
  auto env = wanted_wait_policy();
  if (!std::getenv("OPENBLAS_NUM_THREADS")) env.emplace_back("OPENBLAS_NUM_THREADS", "1");
  return env;
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
