// The CPU this process runs on, as the executor sees it: the cores it may use (its
// affinity mask, not the machine's core count), the instruction set oneDNN's kernels use
// (which honours ONEDNN_MAX_CPU_ISA), and the thread count and wait policy of the
// OpenMP runtime that oneDNN and the fused loops share.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace orchid {

// Cores in this process's affinity mask (sched_getaffinity); at least 1.
int available_cores();

// oneDNN's effective ISA, e.g. "avx512_core", "avx2", "sse41": the machine's best,
// capped by ONEDNN_MAX_CPU_ISA when set.
std::string effective_cpu_isa();
// Its class for cost figures: "avx512" (any AVX-512 flavour), "avx2" or "sse".
std::string cpu_isa_class(const std::string& isa);

// Validates and applies the thread count for everything run after it (oneDNN primitives
// and fused loops created later): an orchid::Error unless 1 <= threads <= 4096.
void set_cpu_threads(int threads);
int cpu_threads();

// OpenMP threads spin before they sleep at a barrier. libgomp's default (300,000 spins,
// about a millisecond) suits a quiet machine but falls off a cliff when other processes
// share the cores: a spinning thread holds the core its descheduled peer needs, and each
// parallel region waits for time slices (measured: bench/results/cpu_plans_progress.md,
// MobileNetV2 on a loaded 2-core machine, 2-4 s per inference spinning vs ~20 ms passive).
// orchid therefore runs with the passive policy (threads sleep at once). libgomp reads
// its settings once, when it is loaded, so they cannot be changed from main(); this
// returns the environment orchid wants (empty when the user chose a wait policy:
// OMP_WAIT_POLICY, GOMP_SPINCOUNT or KMP_BLOCKTIME set, or ORCHID_OMP_POLICY_SET), for the
// CLI to re-execute itself with.
std::vector<std::pair<std::string, std::string>> wanted_openmp_environment();

}  // namespace orchid
