#include "runtime/denormals.hpp"

#include <omp.h>

#include <atomic>
#include <mutex>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define ORCHID_HAS_MXCSR 1
#endif

namespace orchid {

namespace {

std::atomic<bool> g_flush{true};

#ifdef ORCHID_HAS_MXCSR
constexpr unsigned kFtzDaz = 0x8040;  // MXCSR flush-to-zero (bit 15), denormals-are-zero (6)
std::mutex g_workers_mutex;
int g_workers_holds = 0;
thread_local unsigned t_saved_mode = 0;
thread_local bool t_saved = false;  // a thread not in the first team keeps its mode
#endif

}  // namespace

void set_flush_denormals(bool flush) {
  g_flush = flush;
}

bool flush_denormals() {
  return g_flush;
}

DenormalsFlushedOnWorkers::DenormalsFlushedOnWorkers() {
#ifdef ORCHID_HAS_MXCSR
  const std::lock_guard<std::mutex> lock(g_workers_mutex);
  if (g_workers_holds++ > 0) return;
#pragma omp parallel
  {
    if (omp_get_thread_num() != 0) {
      t_saved_mode = _mm_getcsr();
      t_saved = true;
      _mm_setcsr(t_saved_mode | kFtzDaz);
    }
  }
#endif
}

DenormalsFlushedOnWorkers::~DenormalsFlushedOnWorkers() {
#ifdef ORCHID_HAS_MXCSR
  const std::lock_guard<std::mutex> lock(g_workers_mutex);
  if (--g_workers_holds > 0) return;
#pragma omp parallel
  {
    if (omp_get_thread_num() != 0 && t_saved) {
      _mm_setcsr(t_saved_mode);
      t_saved = false;
    }
  }
#endif
}

DenormalsFlushed::DenormalsFlushed(bool flush) {
#ifdef ORCHID_HAS_MXCSR
  if (!flush) return;
  active_ = true;
  caller_mode_ = _mm_getcsr();
  _mm_setcsr(caller_mode_ | kFtzDaz);
#else
  (void)flush;
#endif
}

DenormalsFlushed::~DenormalsFlushed() {
#ifdef ORCHID_HAS_MXCSR
  if (active_) _mm_setcsr(caller_mode_);
#endif
}

}  // namespace orchid
