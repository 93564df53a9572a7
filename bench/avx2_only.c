/* Makes a process see an AVX2-only x86 CPU, for the AVX2 column of bench/executor_benchmark.py.
 *
 *   cc -O2 -shared -fPIC -fno-stack-protector -o avx2_only.so bench/avx2_only.c
 *   LD_PRELOAD=$PWD/avx2_only.so python3 ...      # every engine, ONNX Runtime too
 *
 * Why: ONEDNN_MAX_CPU_ISA=AVX2 caps oneDNN only. ONNX Runtime's MLAS and PyTorch pick their
 * kernels from CPUID and have no such switch, so on an AVX-512 machine the AVX2 column used to
 * compare orchid on AVX2 with ONNX Runtime on AVX-512. With this library loaded, both read a
 * CPU without AVX-512 and AMX, as on the AVX2-only machines the issue was filed from.
 *
 * How: Linux's CPUID faulting (arch_prctl ARCH_SET_CPUID, x86 flag cpuid_fault) turns every
 * CPUID instruction of the thread into SIGSEGV. The handler runs the real CPUID with faulting
 * briefly off, clears the AVX-512 and AMX feature bits, writes the registers and steps over the
 * instruction. The setting is inherited by threads created later and reset by execve, where the
 * preloaded library sets it again (see the end of this file for when). CPUID ran by the dynamic loader before this library's
 * constructor (glibc's own memcpy choice) is not covered: the benchmark also sets
 * GLIBC_TUNABLES for that. If the kernel refuses, the library prints why and the process
 * runs unmasked; the benchmark's header then shows it, as the oneDNN ISA orchid reported
 * under the library (avx2 when masked). */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <cpuid.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <ucontext.h>

/* Raw system calls: the setup runs while the loader relocates this library, before its calls
 * into libc can be made (see the end of the file). */
static long raw_syscall4(long n, long a, long b, long c, long d) {
  long ret;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
  return ret;
}

static int set_cpuid_faulting(int on) { return (int)raw_syscall4(SYS_arch_prctl, ARCH_SET_CPUID, on ? 0 : 1, 0, 0); }

/* The kernel's struct for rt_sigaction; x86-64 needs a restorer that calls rt_sigreturn. */
struct kernel_sigaction {
  void* handler; /* NULL: the default action */
  unsigned long flags;
  void (*restorer)(void);
  unsigned long mask;
};
#define KERNEL_SA_RESTORER 0x04000000UL
void avx2_only_restorer(void);
__asm__(".text\n.globl avx2_only_restorer\n.hidden avx2_only_restorer\navx2_only_restorer:\n"
        "  mov $15, %rax\n  syscall\n");

static int set_segv_handler(void* handler, unsigned long flags) {
  struct kernel_sigaction sa = {handler, flags | KERNEL_SA_RESTORER, avx2_only_restorer, 0};
  return (int)raw_syscall4(SYS_rt_sigaction, SIGSEGV, (long)&sa, 0, 8);
}

/* Leaf 7 subleaf 0: EBX AVX512F(16) DQ(17) IFMA(21) PF(26) ER(27) CD(28) BW(30) VL(31);
 * ECX VBMI(1) VBMI2(6) VNNI(11) BITALG(12) VPOPCNTDQ(14); EDX 4VNNIW(2) 4FMAPS(3)
 * VP2INTERSECT(8) AMX-BF16(22) AVX512-FP16(23) AMX-TILE(24) AMX-INT8(25).
 * Leaf 7 subleaf 1: EAX AVX-VNNI(4) AVX512-BF16(5): AVX-VNNI too, which AVX2-only parts (AMD
 * EPYC before Zen 4, Intel before Alder Lake) lack; oneDNN then reports plain "Intel AVX2". */
static const uint32_t kLeaf7Ebx = (1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) |
                                  (1u << 28) | (1u << 30) | (1u << 31);
static const uint32_t kLeaf7Ecx = (1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14);
static const uint32_t kLeaf7Edx = (1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) |
                                  (1u << 24) | (1u << 25);
static const uint32_t kLeaf7Sub1Eax = (1u << 4) | (1u << 5);

static void on_segv(int sig, siginfo_t* info, void* context) {
  (void)sig;
  (void)info;
  ucontext_t* uc = (ucontext_t*)context;
  greg_t* r = uc->uc_mcontext.gregs;
  const unsigned char* ip = (const unsigned char*)r[REG_RIP];
  if (ip[0] != 0x0f || ip[1] != 0xa2) {
    /* Not CPUID: a real fault. Let it happen again with the default action. */
    set_segv_handler(0, 0);
    return;
  }
  const uint32_t leaf = (uint32_t)r[REG_RAX], sub = (uint32_t)r[REG_RCX];
  uint32_t a, b, c, d;
  set_cpuid_faulting(0);
  __cpuid_count(leaf, sub, a, b, c, d);
  set_cpuid_faulting(1);
  if (leaf == 7 && sub == 0) {
    b &= ~kLeaf7Ebx;
    c &= ~kLeaf7Ecx;
    d &= ~kLeaf7Edx;
  } else if (leaf == 7 && sub == 1) {
    a &= ~kLeaf7Sub1Eax;
  } else if (leaf == 0xd && sub == 0) {
    /* XSAVE components: no opmask/ZMM (5-7) or tile (17-18) state offered. */
    a &= ~((7u << 5) | (3u << 17));
  }
  r[REG_RAX] = a;
  r[REG_RBX] = b;
  r[REG_RCX] = c;
  r[REG_RDX] = d;
  r[REG_RIP] += 2;
}

static void hide_avx512(void) {
  static const char why[] = "avx2_only: CPUID faulting is not available here; the CPU is not masked\n";
  if (set_segv_handler((void*)on_segv, SA_SIGINFO | SA_NODEFER) != 0 || set_cpuid_faulting(1) != 0)
    raw_syscall4(SYS_write, 2, (long)why, sizeof why - 1, 0);
}

/* The masking must start before any library reads CPUID. Constructors are too late: those of
 * the libraries the program links (oneDNN's) run before a preloaded library's, and IFUNC
 * resolvers (GCC's target_clones) run before any constructor. An IFUNC resolver of this library
 * runs while the loader relocates it, before the program and the libraries loaded ahead of it
 * (nearer the program) are relocated, and before every constructor. */
static void avx2_only_marker(void) {}
static void (*resolve_marker(void))(void) {
  static int done;
  if (!done) {
    done = 1;
    hide_avx512();
  }
  return avx2_only_marker;
}
void avx2_only_active(void) __attribute__((ifunc("resolve_marker")));
/* A data reference, so that the loader resolves the IFUNC (calling the resolver) while it
 * relocates this library, not on a first call that never comes. */
void (*const avx2_only_reference)(void) = avx2_only_active;
