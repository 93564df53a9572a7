// How orchid picks the OpenMP wait policy: it looks for other processes busy on its cores
// before it starts, and leaves a policy the user chose alone.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <malloc.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "profile/cpu_environment.hpp"

namespace orchid {
namespace {

TEST(CpuEnvironment, SeesOtherProcessesSpinning) {
  // More spinning processes than the machine has cores: whatever the affinity mask, some
  // of them want this process's cores.
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  std::vector<pid_t> spinners;
  for (long i = 0; i <= cores; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (;;) asm volatile("" ::: "memory");  // spins until killed
    }
    spinners.push_back(pid);
  }
  const double busy = busy_cores_elsewhere(100);
  for (pid_t pid : spinners) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  EXPECT_GE(busy, 1.0);
}

TEST(CpuEnvironment, LeavesTheUsersPolicyAlone) {
  const char* before = std::getenv("OMP_WAIT_POLICY");
  const std::string saved = before ? before : "";
  setenv("OMP_WAIT_POLICY", "ACTIVE", 1);
  for (const auto& [name, value] : wanted_openmp_environment()) {
    EXPECT_EQ(name, "OPENBLAS_NUM_THREADS") << "no wait policy over the user's: " << value;
  }
  const char* mine = std::getenv("ORCHID_OMP_POLICY_SET");
  if (!mine || mine[0] == '1') {
    EXPECT_NE(openmp_wait_description().find("OMP_WAIT_POLICY=ACTIVE"), std::string::npos)
        << openmp_wait_description();
  }
  if (before) {
    setenv("OMP_WAIT_POLICY", saved.c_str(), 1);
  } else {
    unsetenv("OMP_WAIT_POLICY");
  }
}

TEST(CpuEnvironment, ChoosesAPolicyAndSaysWhy) {
  for (const char* name :
       {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "ORCHID_OMP_POLICY_SET"}) {
    if (std::getenv(name)) return;  // chosen outside this test: nothing to choose here
  }
  const auto env = wanted_openmp_environment();
  ASSERT_FALSE(env.empty());
  bool spin = false, passive = false, reason = false;
  for (const auto& [name, value] : env) {
    spin = spin || (name == "GOMP_SPINCOUNT" && value != "0");
    passive = passive || (name == "OMP_WAIT_POLICY" && value == "PASSIVE");
    reason = reason || (name == "ORCHID_OMP_POLICY_SET" &&
                        value.find("busy with other processes at start") != std::string::npos);
  }
  EXPECT_NE(spin, passive);  // exactly one of the two
  EXPECT_TRUE(reason);
}

// Restores an environment variable when the test ends.
struct SavedVariable {
  explicit SavedVariable(const char* name) : name(name) {
    if (const char* v = std::getenv(name)) value = v;
  }
  ~SavedVariable() {
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  const char* name;
  std::optional<std::string> value;
};

TEST(CpuEnvironment, AsksForOpenBlasWithoutAPoolUnlessTheUserChose) {
  SavedVariable saved("OPENBLAS_NUM_THREADS");
  unsetenv("OPENBLAS_NUM_THREADS");
  const auto unset = wanted_openmp_environment();
  EXPECT_NE(std::find(unset.begin(), unset.end(),
                      std::pair<std::string, std::string>{"OPENBLAS_NUM_THREADS", "1"}),
            unset.end());
  setenv("OPENBLAS_NUM_THREADS", "3", 1);
  for (const auto& [name, value] : wanted_openmp_environment()) {
    EXPECT_NE(name, "OPENBLAS_NUM_THREADS");
  }
}

TEST(CpuEnvironment, SetsALoadedOpenBlasPoolToOneThread) {
  // This binary links CBC, whose LAPACK is OpenBLAS (scripts/setup.sh installs it).
  void* blas = dlopen("libopenblas.so.0", RTLD_LAZY | RTLD_NOLOAD);
  ASSERT_NE(blas, nullptr) << "OpenBLAS is not loaded: is libopenblas-dev the BLAS/LAPACK?";
  const auto set = reinterpret_cast<void (*)(int)>(dlsym(blas, "openblas_set_num_threads"));
  const auto get = reinterpret_cast<int (*)()>(dlsym(blas, "openblas_get_num_threads"));
  ASSERT_TRUE(set && get);
  SavedVariable saved("OPENBLAS_NUM_THREADS");
  unsetenv("OPENBLAS_NUM_THREADS");
  set(2);
  keep_blas_single_threaded();
  EXPECT_EQ(get(), 1);
  setenv("OPENBLAS_NUM_THREADS", "2", 1);  // the user's choice stands
  set(2);
  keep_blas_single_threaded();
  EXPECT_EQ(get(), 2);
  set(1);
  dlclose(blas);
}

// In a child process (malloc's thresholds are process-wide): frees a 16 MiB block, then
// takes and frees 24 MiB in blocks of 1 MiB, as an executor build's tables do, and returns
// how many MiB the heap kept from the system afterwards. `hold` calls
// return_large_blocks_to_the_system() first. -1 when the child failed.
long heap_mib_kept_after_transient(bool hold) {
  int pipe_ends[2];
  if (pipe(pipe_ends) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "GLIBC_TUNABLES"}) {
      unsetenv(name);
    }
    if (hold) {
      // A tunable that is not malloc's (the benchmark's AVX2 column sets one) changes nothing.
      setenv("GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX512F", 1);
      return_large_blocks_to_the_system();
    }
    void* big = std::malloc(16 << 20);
    static_cast<volatile char*>(big)[0] = 1;
    std::free(big);
    const auto heap_before = mallinfo2().arena;
    std::vector<void*> blocks;
    for (int i = 0; i < 24; ++i) {
      blocks.push_back(std::malloc(1 << 20));
      std::memset(blocks.back(), 1, 1 << 20);
    }
    for (void* block : blocks) std::free(block);
    const long kept = (static_cast<long>(mallinfo2().arena) - static_cast<long>(heap_before)) >> 20;
    const bool written = write(pipe_ends[1], &kept, sizeof kept) == sizeof kept;
    _exit(written ? 0 : 1);
  }
  close(pipe_ends[1]);
  long kept = -1;
  if (pid < 0 || read(pipe_ends[0], &kept, sizeof kept) != sizeof kept) kept = -1;
  close(pipe_ends[0]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  return kept;
}

TEST(CpuEnvironment, LargeBlocksGoBackToTheSystemAfterALargerOneWasFreed) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer replaces malloc; mallinfo2 does not see its blocks";
#else
  // glibc's default: the freed 16 MiB raised the thresholds (mapping to 16, trimming to 32
  // MiB), so the heap keeps the 24 MiB.
  EXPECT_GE(heap_mib_kept_after_transient(false), 20);
  const long kept = heap_mib_kept_after_transient(true);
  EXPECT_GE(kept, 0);
  EXPECT_LE(kept, 2);
#endif
}

}  // namespace
}  // namespace orchid
