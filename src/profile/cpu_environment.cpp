#include "profile/cpu_environment.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdlib>

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

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

std::vector<std::pair<std::string, std::string>> wanted_openmp_environment() {
  for (const char* chosen :
       {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "ORCHID_OMP_POLICY_SET"}) {
    if (std::getenv(chosen)) return {};
  }
  return {{"OMP_WAIT_POLICY", "PASSIVE"},
          {"KMP_BLOCKTIME", "0"},  // the same for LLVM/Intel OpenMP, should it be linked
          {"ORCHID_OMP_POLICY_SET", "1"}};
}

}  // namespace orchid
