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
// about a millisecond) falls off a cliff when other processes share the cores: a spinning
// thread holds the core its descheduled peer needs (MobileNetV2 with two busy processes
// on a 2-core machine: 430 ms per inference spinning, 10 ms sleeping at once). Sleeping at
// once costs much on a quiet machine instead: every parallel region then wakes its
// threads through the kernel (MobileNetV2 quiet: 7.9 ms sleeping, 4.2 ms spinning).
// orchid therefore looks before it starts: when other processes leave the cores it may
// use idle (less than a quarter of a core of CPU time on average over 50 ms, in any of
// three consecutive looks, so a process starting beside it does not count), threads spin briefly
// (100,000 spins: a fraction of a millisecond, which bridges the gaps between primitives; with
// 1,000 this VM woke sleeping threads slowly until its idle polling adapted, MobileNetV2's first
// runs 7.3 ms instead of 2.9); otherwise they sleep at once (passive). libgomp reads
// its settings once, when it is loaded, so they cannot be changed from main(); this returns the
// environment orchid wants, for the CLI to re-execute itself with: the wait policy (none when
// the user chose one: OMP_WAIT_POLICY, GOMP_SPINCOUNT or KMP_BLOCKTIME set, or
// ORCHID_OMP_POLICY_SET from an earlier look) and OPENBLAS_NUM_THREADS=1 unless set (see
// keep_blas_single_threaded). Empty when there is nothing to set.
std::vector<std::pair<std::string, std::string>> wanted_openmp_environment();

// OpenBLAS, which CBC's LAPACK loads (Debian's pthread build), starts a thread per core
// that spins with sched_yield() for a while after each call before it sleeps; orchid
// computes nothing with BLAS, yet those threads took the cores from the executor's: on a
// quiet 2-core VM a 12 us model's runs took 4.4 ms (a scheduler tick) one time in ten or
// more after the BLP was solved. wanted_openmp_environment() asks for
// OPENBLAS_NUM_THREADS=1 (no pool at all) unless the user set it; this sets a pool that
// was started anyway (the Python extension loads with the interpreter's environment) to one
// thread, so its threads get no more work and sleep. A no-op where OpenBLAS is not loaded
// or OPENBLAS_NUM_THREADS is set.
void keep_blas_single_threaded();

// glibc raises its mmap threshold (up to 32 MiB) each time a large block is freed, and its
// trim threshold to twice that, so later large blocks come from the heap and freed heap
// pages stay with the process: the executor builds' transient tables (index tensors and
// layout tables of tens of MB, freed after each build) pile up. Candy's first run (nine
// executors built) peaked at 164-194 MiB, 147-150 with the threshold held at 1 MiB. This
// holds it there (blocks of 1 MiB or more are mapped apart and go back to the system when
// freed; the heap's free top is trimmed), unless the user tuned malloc
// (MALLOC_MMAP_THRESHOLD_ or MALLOC_TOP_PAD_ set, or a glibc.malloc tunable). The executor
// allocates its buffers when built, so its runs map nothing.
void return_large_blocks_to_the_system();

// How many of this process's cores (its affinity mask) other processes kept busy over
// `milliseconds` (CPU time from /proc/stat, this process's own subtracted; this thread
// sleeps meanwhile; clock ticks are 10 ms, so look 50 ms or more). Negative when
// unreadable.
double busy_cores_elsewhere(int milliseconds);

// How the OpenMP threads wait, in words, for run reports: orchid's choice and why, or
// the user's setting.
std::string openmp_wait_description();
// Whether idle OpenMP threads spin before they sleep (anything but the passive policy or
// a zero spin count): which plan is fastest can depend on it.
bool openmp_threads_spin();

}  // namespace orchid
