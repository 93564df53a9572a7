// Denormal floats (magnitudes below 1.2e-38) cost x86 cores a microcode assist per
// operation: a convolution whose weights or inputs hold some ran 30x slower here (oneDNN's
// AVX2 and AVX-512 kernels alike), with all of them 200x. Inference gains nothing from
// them, so they are flushed to zero (MXCSR's FTZ and DAZ, as TensorFlow does by default
// and oneDNN's documentation advises) on the threads that run a plan: the OpenMP threads
// that run oneDNN and the fused loops while a flushing executor exists, the calling thread
// while it runs one. Each thread's earlier mode comes back afterwards.
#pragma once

namespace orchid {

// Process-wide, read when an executor is built: whether it flushes denormals (default
// true; `orchid run --keep-denormals`).
void set_flush_denormals(bool flush);
bool flush_denormals();

// Held by each flushing executor: the OpenMP threads other than the caller flush
// denormals while one is held (set when the first is taken, restored when the last is
// released; setting them per run took two parallel regions, 1.3 us, which microsecond
// layers of a distributed plan would pay each).
class DenormalsFlushedOnWorkers {
 public:
  DenormalsFlushedOnWorkers();
  ~DenormalsFlushedOnWorkers();
  DenormalsFlushedOnWorkers(const DenormalsFlushedOnWorkers&) = delete;
  DenormalsFlushedOnWorkers& operator=(const DenormalsFlushedOnWorkers&) = delete;
};

// The calling thread flushes denormals for the guard's lifetime (when `flush`).
class DenormalsFlushed {
 public:
  explicit DenormalsFlushed(bool flush);
  ~DenormalsFlushed();
  DenormalsFlushed(const DenormalsFlushed&) = delete;
  DenormalsFlushed& operator=(const DenormalsFlushed&) = delete;

 private:
  bool active_ = false;
  unsigned caller_mode_ = 0;
};

}  // namespace orchid
