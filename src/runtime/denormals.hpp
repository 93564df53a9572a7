// Denormal floats (magnitudes below 1.2e-38) cost x86 cores a microcode assist per
// operation: a convolution whose weights or inputs hold some ran 30x slower here (oneDNN's
// AVX2 and AVX-512 kernels alike), with all of them 200x. Inference gains nothing from
// them, so while a plan runs they are flushed to zero (MXCSR's FTZ and DAZ, as TensorFlow
// does by default and oneDNN's documentation advises), on the calling thread and on the
// OpenMP threads that run oneDNN and the fused loops, and restored afterwards (two
// parallel regions per run: about 1.3 us here, which only microsecond models notice).
#pragma once

namespace orchid {

// Process-wide: whether executors flush denormals (default true; `--keep-denormals`).
void set_flush_denormals(bool flush);
bool flush_denormals();

// Sets FTZ and DAZ on this thread and every OpenMP thread for its lifetime, when
// flush_denormals(); each thread's earlier mode comes back when it ends.
class DenormalsFlushed {
 public:
  DenormalsFlushed();
  ~DenormalsFlushed();
  DenormalsFlushed(const DenormalsFlushed&) = delete;
  DenormalsFlushed& operator=(const DenormalsFlushed&) = delete;

 private:
  bool active_ = false;
  bool workers_ = false;  // OpenMP threads besides this one
  unsigned caller_mode_ = 0;
};

}  // namespace orchid
