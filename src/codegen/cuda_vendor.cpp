// cuBLASLt and cuDNN behind dlopen. Types and enums come from the toolkit's headers
// (present wherever orchid builds its CUDA backend); the libraries themselves are
// optional at run time.
#include "codegen/cuda_vendor.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <utility>
#include <vector>

#include "util/error.hpp"

#if __has_include(<cublasLt.h>)
#include <cublasLt.h>
#define ORCHID_HAVE_CUBLASLT 1
#endif
#if __has_include(<cudnn.h>)
#include <cudnn.h>
#define ORCHID_HAVE_CUDNN 1
#endif

namespace orchid::codegen {

namespace {

#define ORCHID_VSTR2(x) #x
#define ORCHID_VSTR(x) ORCHID_VSTR2(x)
// Each library's entry points are listed once (an X-macro list) and expanded twice: a
// pointer member per function, then its lookup in the loaded library.
#define ORCHID_ENTRY_POINTER(fn) decltype(&fn) fn##_p = nullptr;
#define ORCHID_ENTRY_RESOLVE(fn) \
  fn##_p = reinterpret_cast<decltype(&fn)>(lib.symbol(ORCHID_VSTR(fn)));

// The first of `names` that loads, and each symbol from the first handle that has it.
struct Library {
  std::vector<void*> handles;
  std::string error;

  Library(const char* what, const std::vector<const char*>& names) {
    for (const char* n : names) {
      if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) handles.push_back(h);
    }
    if (handles.empty()) error = fmt::format("{} is not installed ({} not found)", what, names[0]);
  }
  void* symbol(const char* name) {
    for (void* h : handles) {
      if (void* s = dlsym(h, name)) return s;
    }
    if (error.empty()) error = fmt::format("the installed library lacks {}", name);
    return nullptr;
  }
};

std::int64_t bytes_offset(const DeviceTensor& t) {
  return t.offset;
}

CUdeviceptr address(const std::array<CUdeviceptr, 4>& bases, const DeviceTensor& t) {
  return bases[static_cast<std::size_t>(t.region)] + static_cast<CUdeviceptr>(bytes_offset(t));
}

#ifdef ORCHID_HAVE_CUBLASLT
struct Lt {
// clang-format off
#define ORCHID_LT_LIST(X) \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtMatmul) X(cublasLtMatmulDescCreate) \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate) \
  X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute) \
  X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy) \
  X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic)
  // clang-format on
  ORCHID_LT_LIST(ORCHID_ENTRY_POINTER)
  Library lib{"cuBLASLt",
              {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11", "libcublasLt.so"}};
  cublasLtHandle_t handle = nullptr;

  Lt() {
    if (!lib.error.empty()) return;
    ORCHID_LT_LIST(ORCHID_ENTRY_RESOLVE)
    if (lib.error.empty() && cublasLtCreate_p(&handle) != CUBLAS_STATUS_SUCCESS) {
      lib.error = "cublasLtCreate failed";
    }
  }
};

Lt& lt() {
  static Lt l;
  return l;
}

void lt_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    fail("cuBLASLt: {} failed (status {})", what, static_cast<int>(s));
}

// C = A B row-major is C^T = B^T A^T column-major: cuBLASLt's "A" is our B (n x k,
// or its transpose), its "B" our A, its M our n and its N our m. The bias then runs
// along cuBLASLt's rows, our columns: one value per output feature.
class LtGemm final : public VendorOp {
 public:
  LtGemm(const VendorGemm& g, const VendorMemory& memory) : g_(g) {
    Lt& l = lt();
    lt_check(l.cublasLtMatmulDescCreate_p(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
    const cublasOperation_t ta = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = CUBLAS_OP_N;
    set_desc(CUBLASLT_MATMUL_DESC_TRANSA, ta);
    set_desc(CUBLASLT_MATMUL_DESC_TRANSB, tb);
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
    const bool bias = g.bias.has_value();
    switch (g.activation) {
      case VendorActivation::None:
        epi = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
        break;
      case VendorActivation::Relu:
        epi = bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
        break;
    }
    set_desc(CUBLASLT_MATMUL_DESC_EPILOGUE, epi);
    if (bias) set_desc(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, std::int64_t{0});
    // Column-major layouts of the three operands (rows, cols, leading dimension).
    a_ = layout(g.transpose_b ? g.k : g.n, g.transpose_b ? g.n : g.k, g.transpose_b ? g.k : g.n,
                g.stride_b);
    b_ = layout(g.k, g.m, g.k, g.stride_a);
    c_ = layout(g.n, g.m, g.n, g.stride_c);
    cublasLtMatmulPreference_t pref = nullptr;
    lt_check(l.cublasLtMatmulPreferenceCreate_p(&pref), "preference");
    workspace_bytes_ = std::size_t{32} << 20;
    lt_check(
        l.cublasLtMatmulPreferenceSetAttribute_p(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &workspace_bytes_, sizeof(workspace_bytes_)),
        "preference workspace");
    // Only kernels that accept the operands' true alignment: cuBLASLt otherwise assumes
    // 256 bytes, which a batch's matrix (at its stride) need not have.
    const std::pair<cublasLtMatmulPreferenceAttributes_t, std::uint32_t> alignments[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, operand_alignment(g.b, g.stride_b)},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, operand_alignment(g.a, g.stride_a)},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, operand_alignment(g.c, g.stride_c)},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, operand_alignment(g.c, g.stride_c)}};
    for (const auto& [attr, bytes] : alignments) {
      lt_check(l.cublasLtMatmulPreferenceSetAttribute_p(pref, attr, &bytes, sizeof(bytes)),
               "preference alignment");
    }
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t s = l.cublasLtMatmulAlgoGetHeuristic_p(l.handle, desc_, a_, b_, c_, c_,
                                                                pref, 1, &result, &found);
    l.cublasLtMatmulPreferenceDestroy_p(pref);
    if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
      fail("cuBLASLt: no algorithm for a {}x{}x{} matmul (batch {})", g.m, g.n, g.k, g.batch);
    }
    algo_ = result.algo;
    workspace_bytes_ = result.workspaceSize;
    if (workspace_bytes_ > 0) workspace_ = memory.alloc(workspace_bytes_);
  }
  ~LtGemm() override {
    Lt& l = lt();
    for (auto m : {a_, b_, c_}) {
      if (m) l.cublasLtMatrixLayoutDestroy_p(m);
    }
    if (desc_) l.cublasLtMatmulDescDestroy_p(desc_);
  }

  void enqueue(const std::array<CUdeviceptr, 4>& bases, CUstream stream) override {
    Lt& l = lt();
    if (g_.bias) {
      const CUdeviceptr bias = address(bases, *g_.bias);
      set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, reinterpret_cast<const void*>(bias));
    }
    const float alpha = 1.0f, beta = 0.0f;
    const auto* a = reinterpret_cast<const void*>(address(bases, g_.b));
    const auto* b = reinterpret_cast<const void*>(address(bases, g_.a));
    auto* c = reinterpret_cast<void*>(address(bases, g_.c));
    lt_check(l.cublasLtMatmul_p(l.handle, desc_, &alpha, a, a_, b, b_, &beta, c, c_, c, c_, &algo_,
                                reinterpret_cast<void*>(workspace_), workspace_bytes_,
                                reinterpret_cast<cudaStream_t>(stream)),
             "cublasLtMatmul");
  }

 private:
  template <typename T>
  void set_desc(cublasLtMatmulDescAttributes_t attr, const T& value) {
    lt_check(lt().cublasLtMatmulDescSetAttribute_p(desc_, attr, &value, sizeof(value)),
             "matmul attribute");
  }
  cublasLtMatrixLayout_t layout(std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                std::int64_t batch_stride) {
    Lt& l = lt();
    cublasLtMatrixLayout_t m = nullptr;
    lt_check(l.cublasLtMatrixLayoutCreate_p(&m, CUDA_R_32F, static_cast<std::uint64_t>(rows),
                                            static_cast<std::uint64_t>(cols), ld),
             "layout");
    const auto count = static_cast<std::int32_t>(g_.batch);
    lt_check(l.cublasLtMatrixLayoutSetAttribute_p(m, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                  sizeof(count)),
             "batch count");
    lt_check(l.cublasLtMatrixLayoutSetAttribute_p(m, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                  &batch_stride, sizeof(batch_stride)),
             "batch stride");
    return m;
  }

  VendorGemm g_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  std::size_t workspace_bytes_ = 0;
  CUdeviceptr workspace_ = 0;
};
#endif

#ifdef ORCHID_HAVE_CUDNN
struct Dnn {
// clang-format off
#define ORCHID_DNN_LIST(X) \
  X(cudnnCreate) X(cudnnSetStream) X(cudnnGetErrorString) \
  X(cudnnCreateTensorDescriptor) X(cudnnSetTensor4dDescriptor) X(cudnnDestroyTensorDescriptor) \
  X(cudnnCreateFilterDescriptor) X(cudnnSetFilter4dDescriptor) X(cudnnDestroyFilterDescriptor) \
  X(cudnnCreateConvolutionDescriptor) X(cudnnSetConvolution2dDescriptor) \
  X(cudnnSetConvolutionGroupCount) X(cudnnSetConvolutionMathType) \
  X(cudnnDestroyConvolutionDescriptor) X(cudnnCreateActivationDescriptor) \
  X(cudnnSetActivationDescriptor) X(cudnnDestroyActivationDescriptor) \
  X(cudnnGetConvolutionForwardAlgorithm_v7) X(cudnnGetConvolutionForwardWorkspaceSize) \
  X(cudnnConvolutionBiasActivationForward)
  // clang-format on
  ORCHID_DNN_LIST(ORCHID_ENTRY_POINTER)
  Library lib{"cuDNN",
              {"libcudnn.so.9", "libcudnn_cnn.so.9", "libcudnn_ops.so.9", "libcudnn_graph.so.9",
               "libcudnn.so.8", "libcudnn.so"}};
  cudnnHandle_t handle = nullptr;

  Dnn() {
    if (!lib.error.empty()) return;
    ORCHID_DNN_LIST(ORCHID_ENTRY_RESOLVE)
    if (lib.error.empty() && cudnnCreate_p(&handle) != CUDNN_STATUS_SUCCESS) {
      lib.error = "cudnnCreate failed";
    }
  }
};

Dnn& dnn() {
  static Dnn d;
  return d;
}

void dnn_check(cudnnStatus_t s, const char* what) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  const char* text = dnn().cudnnGetErrorString_p ? dnn().cudnnGetErrorString_p(s) : "?";
  fail("cuDNN: {} failed: {}", what, text);
}

int narrow(std::int64_t v) {
  return static_cast<int>(v);
}

// An NCHW float tensor descriptor of `dims`.
cudnnTensorDescriptor_t tensor4d(const std::array<std::int64_t, 4>& dims, const char* what) {
  Dnn& d = dnn();
  cudnnTensorDescriptor_t t = nullptr;
  dnn_check(d.cudnnCreateTensorDescriptor_p(&t), what);
  dnn_check(d.cudnnSetTensor4dDescriptor_p(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, narrow(dims[0]),
                                           narrow(dims[1]), narrow(dims[2]), narrow(dims[3])),
            what);
  return t;
}

class DnnConv final : public VendorOp {
 public:
  DnnConv(const VendorConv& c, const VendorMemory& memory) : c_(c) {
    Dnn& d = dnn();
    const Shape& ys = c.y.shape;
    x_ = tensor4d({c.n, c.c, c.h, c.wd}, "x descriptor");
    y_ = tensor4d({ys[0], ys[1], ys[2], ys[3]}, "y descriptor");
    bias_ = tensor4d({1, c.k, 1, 1}, "bias descriptor");
    dnn_check(d.cudnnCreateFilterDescriptor_p(&w_), "filter descriptor");
    dnn_check(d.cudnnCreateConvolutionDescriptor_p(&conv_), "convolution descriptor");
    dnn_check(d.cudnnCreateActivationDescriptor_p(&act_), "activation descriptor");
    dnn_check(d.cudnnSetFilter4dDescriptor_p(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, narrow(c.k),
                                             narrow(c.c / c.groups), narrow(c.r), narrow(c.s)),
              "filter descriptor");
    dnn_check(d.cudnnSetConvolution2dDescriptor_p(
                  conv_, narrow(c.pad_h), narrow(c.pad_w), narrow(c.stride_h), narrow(c.stride_w),
                  narrow(c.dil_h), narrow(c.dil_w), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
              "convolution descriptor");
    dnn_check(d.cudnnSetConvolutionGroupCount_p(conv_, narrow(c.groups)), "group count");
    // FMA only: TF32 tensor cores would miss the reference by more than the tolerance.
    dnn_check(d.cudnnSetConvolutionMathType_p(conv_, CUDNN_FMA_MATH), "math type");
    const bool relu = c.activation == VendorActivation::Relu;
    dnn_check(d.cudnnSetActivationDescriptor_p(
                  act_, relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                  CUDNN_NOT_PROPAGATE_NAN, 0.0),
              "activation descriptor");
    // The fused call supports the identity activation with this algorithm only.
    algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    if (relu) {
      cudnnConvolutionFwdAlgoPerf_t perf[8];
      int found = 0;
      if (d.cudnnGetConvolutionForwardAlgorithm_v7_p(d.handle, x_, w_, conv_, y_, 8, &found,
                                                     perf) == CUDNN_STATUS_SUCCESS) {
        for (int i = 0; i < found; ++i) {
          if (perf[i].status == CUDNN_STATUS_SUCCESS) {
            algo_ = perf[i].algo;
            break;
          }
        }
      }
    }
    dnn_check(d.cudnnGetConvolutionForwardWorkspaceSize_p(d.handle, x_, w_, conv_, y_, algo_,
                                                          &workspace_bytes_),
              "workspace size");
    if (workspace_bytes_ > 0) workspace_ = memory.alloc(workspace_bytes_);
    if (!c.bias) {
      const std::vector<float> zeros(static_cast<std::size_t>(c.k), 0.0f);
      zero_bias_ = memory.alloc(zeros.size() * sizeof(float));
      memory.upload(zero_bias_, zeros.data(), zeros.size() * sizeof(float));
    }
  }
  ~DnnConv() override {
    Dnn& d = dnn();
    for (auto t : {x_, y_, bias_}) {
      if (t) d.cudnnDestroyTensorDescriptor_p(t);
    }
    if (w_) d.cudnnDestroyFilterDescriptor_p(w_);
    if (conv_) d.cudnnDestroyConvolutionDescriptor_p(conv_);
    if (act_) d.cudnnDestroyActivationDescriptor_p(act_);
  }

  void enqueue(const std::array<CUdeviceptr, 4>& bases, CUstream stream) override {
    Dnn& d = dnn();
    dnn_check(d.cudnnSetStream_p(d.handle, reinterpret_cast<cudaStream_t>(stream)), "set stream");
    const float one = 1.0f, zero = 0.0f;
    auto* y = reinterpret_cast<void*>(address(bases, c_.y));
    const CUdeviceptr bias = c_.bias ? address(bases, *c_.bias) : zero_bias_;
    // z (the residual input) is y with alpha2 = 0: it does not contribute.
    dnn_check(d.cudnnConvolutionBiasActivationForward_p(
                  d.handle, &one, x_, reinterpret_cast<const void*>(address(bases, c_.x)), w_,
                  reinterpret_cast<const void*>(address(bases, c_.w)), conv_, algo_,
                  reinterpret_cast<void*>(workspace_), workspace_bytes_, &zero, y_, y, bias_,
                  reinterpret_cast<const void*>(bias), act_, y_, y),
              "cudnnConvolutionBiasActivationForward");
  }

 private:
  VendorConv c_;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr, bias_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnActivationDescriptor_t act_ = nullptr;
  cudnnConvolutionFwdAlgo_t algo_{};
  std::size_t workspace_bytes_ = 0;
  CUdeviceptr workspace_ = 0, zero_bias_ = 0;
};
#endif

// The op when its library loaded; else null with the library's reason.
template <typename Op, typename Spec>
std::unique_ptr<VendorOp> make_if_loaded(const Library& lib, const Spec& spec,
                                         const VendorMemory& memory, std::string* why) {
  if (!lib.error.empty()) {
    *why = lib.error;
    return nullptr;
  }
  return std::make_unique<Op>(spec, memory);
}

}  // namespace

std::unique_ptr<VendorOp> make_vendor_op(const VendorCall& call, const VendorMemory& memory,
                                         std::string* why) {
  if (call.kind == VendorCall::Kind::Gemm) {
#ifdef ORCHID_HAVE_CUBLASLT
    return make_if_loaded<LtGemm>(lt().lib, call.gemm, memory, why);
#else
    *why = "orchid was built without cublasLt.h";
    return nullptr;
#endif
  }
#ifdef ORCHID_HAVE_CUDNN
  return make_if_loaded<DnnConv>(dnn().lib, call.conv, memory, why);
#else
  *why = "orchid was built without cudnn.h";
  return nullptr;
#endif
}

}  // namespace orchid::codegen
