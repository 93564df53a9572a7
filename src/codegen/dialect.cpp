#include "codegen/dialect.hpp"

#include "util/error.hpp"

namespace orchid::codegen {

std::string_view target_name(Target target) {
  return target == Target::Cuda ? "cuda" : "opencl";
}

Target parse_target(std::string_view name) {
  if (name == "cuda") return Target::Cuda;
  if (name == "opencl") return Target::OpenCL;
  fail("unknown code generation target '{}' (expected cuda or opencl)", name);
}

namespace {

// Shared by both targets: helpers written in the dialect itself.
constexpr const char* kCommon = R"(
DEVICE_FN float orchid_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
DEVICE_FN float orchid_round_even(float x) { return rintf(x); }
DEVICE_FN float orchid_softplus(float x) { return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x))); }
// Four consecutive floats at element index i of p; i is a multiple of 4 and p 16-byte
// aligned (code generation checks both before it writes these).
#define LOAD_F4(p, i) (*(GLOBAL const float4*)((p) + (i)))
#define STORE_F4(p, i, v) (*(GLOBAL float4*)((p) + (i)) = (v))
)";

constexpr const char* kCuda = R"(// orchid generated kernels: CUDA C++ (NVRTC or nvcc)
#define KERNEL extern "C" __global__ __launch_bounds__(ORCHID_BLOCK)
#define DEVICE_FN __device__ __forceinline__
#define GLOBAL
#define SHARED __shared__
#define BARRIER() __syncthreads()
#define GROUP_ID ((i64)blockIdx.x)
#define NUM_GROUPS ((i64)gridDim.x)
#define LOCAL_ID ((int)threadIdx.x)
#define ORCHID_INF __int_as_float(0x7f800000)
typedef long long i64;
typedef int i32;
typedef unsigned long long u64;
typedef unsigned int u32;
typedef signed char i8;
typedef unsigned char uchar;
typedef unsigned char u8;
#define MAKE_F4(a, b, c, d) make_float4(a, b, c, d)
)";

constexpr const char* kOpenCL = R"(// orchid generated kernels: OpenCL C 1.2+
#define KERNEL __kernel __attribute__((reqd_work_group_size(ORCHID_BLOCK, 1, 1)))
#define DEVICE_FN inline
#define GLOBAL __global
#define SHARED __local
#define BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#define GROUP_ID ((i64)get_group_id(0))
#define NUM_GROUPS ((i64)get_num_groups(0))
#define LOCAL_ID ((int)get_local_id(0))
#define ORCHID_INF INFINITY
typedef long i64;
typedef int i32;
typedef ulong u64;
typedef uint u32;
typedef char i8;
typedef uchar u8;
#define MAKE_F4(a, b, c, d) ((float4)(a, b, c, d))
#define expf exp
#define logf log
#define log1pf log1p
#define sqrtf sqrt
#define erff erf
#define tanhf tanh
#define powf pow
#define fabsf fabs
#define fmaxf fmax
#define fminf fmin
#define floorf floor
#define ceilf ceil
#define rintf rint
#define truncf trunc
#define fmodf fmod
#define sinf sin
#define cosf cos
#define tanf tan
#define asinf asin
#define acosf acos
#define atanf atan
#define sinhf sinh
#define coshf cosh
#define asinhf asinh
#define acoshf acosh
#define atanhf atanh
)";

}  // namespace

std::string prelude(Target target) {
  // Threads per block / work-group of every generated kernel (a power of two: the
  // block reductions halve it).
  std::string out = "#define ORCHID_BLOCK 256\n";
  out += target == Target::Cuda ? kCuda : kOpenCL;
  return out + kCommon;
}

}  // namespace orchid::codegen
