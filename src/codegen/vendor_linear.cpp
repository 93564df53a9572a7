#include "codegen/vendor_linear.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <vector>

#include "ir/ops/layout_params.hpp"
#include "ir/ops/window_geometry.hpp"
#include "util/error.hpp"

namespace orchid::codegen {

LinearBackend parse_linear_backend(const std::string& name) {
  if (name == "generated") return LinearBackend::Generated;
  if (name == "vendor") return LinearBackend::Vendor;
  if (name == "auto") return LinearBackend::Auto;
  fail("--linear-backend: expected generated, vendor or auto, got '{}'", name);
}

std::string linear_backend_name(LinearBackend backend) {
  switch (backend) {
    case LinearBackend::Generated:
      return "generated";
    case LinearBackend::Vendor:
      return "vendor";
    case LinearBackend::Auto:
      return "auto";
  }
  return "?";
}

std::string activation_name(VendorActivation a) {
  switch (a) {
    case VendorActivation::None:
      return "none";
    case VendorActivation::Relu:
      return "relu";
  }
  return "?";
}

std::uint32_t operand_alignment(const DeviceTensor& t, std::int64_t batch_stride_elements) {
  const std::int64_t stride_bytes =
      batch_stride_elements * static_cast<std::int64_t>(dtype_size(t.dtype));
  std::uint32_t align = 256;
  while (align > 1 && (t.offset % align != 0 || stride_bytes % align != 0)) align /= 2;
  return align;
}

std::string VendorCall::describe() const {
  if (kind == Kind::Gemm) {
    std::vector<std::string> parts;
    if (gemm.bias) parts.emplace_back("bias");
    if (gemm.activation != VendorActivation::None)
      parts.push_back(activation_name(gemm.activation));
    const std::string epi = fmt::format("{}", fmt::join(parts, "+"));
    return fmt::format("cublasLt matmul{}{}", gemm.transpose_b ? " (B transposed)" : "",
                       epi.empty() ? "" : " [" + epi + "]");
  }
  return fmt::format("cudnn conv+bias+{}",
                     conv.activation == VendorActivation::Relu ? "relu" : std::string("identity"));
}

namespace {

struct Matcher {
  const Graph& g;
  const std::function<const Node*(const std::string&)>& producer;
  std::string why;

  std::optional<float> scalar(const std::string& t) const {
    if (t.empty() || !g.is_constant(t)) return std::nullopt;
    const TensorInfo& info = g.tensor(t);
    if (info.data->numel() != 1) return std::nullopt;
    return static_cast<float>(info.data->get_as_double(0));
  }
  bool near(const std::string& t, double want) const {
    const auto v = scalar(t);
    return v && std::fabs(*v - want) <= 1e-4 * std::fabs(want);
  }
  const Node* op(const std::string& t, const char* type, std::size_t inputs) const {
    const Node* n = producer(t);
    return n && n->op_type == type && n->inputs.size() == inputs ? n : nullptr;
  }
  // For a binary node reading `x` on one side, the other input.
  static std::optional<std::string> other(const Node& n, const std::string& x) {
    if (n.inputs[0] == x) return n.inputs[1];
    if (n.inputs[1] == x) return n.inputs[0];
    return std::nullopt;
  }

  // `t` = 0.5 * x * (1 + erf(x / sqrt 2)) (as fission spells GELU): returns x.
  std::optional<std::string> gelu_input(const std::string& t) const {
    const Node* half = op(t, "Mul", 2);
    if (!half) return std::nullopt;
    for (int side = 0; side < 2; ++side) {
      if (!near(half->inputs[1 - side], 0.5)) continue;
      const Node* prod = op(half->inputs[side], "Mul", 2);
      if (!prod) continue;
      for (int ps = 0; ps < 2; ++ps) {
        const std::string& x = prod->inputs[ps];
        const Node* add = op(prod->inputs[1 - ps], "Add", 2);
        if (!add) continue;
        for (int as = 0; as < 2; ++as) {
          if (!near(add->inputs[1 - as], 1.0)) continue;
          const Node* erf = op(add->inputs[as], "Erf", 1);
          if (!erf) continue;
          const Node* div = op(erf->inputs[0], "Div", 2);
          const Node* mul = op(erf->inputs[0], "Mul", 2);
          if (div && div->inputs[0] == x && near(div->inputs[1], std::sqrt(2.0))) return x;
          if (mul && other(*mul, x) && near(*other(*mul, x), 1.0 / std::sqrt(2.0))) return x;
        }
      }
    }
    return std::nullopt;
  }

  // Peels activation and bias off the stored tensor down to the anchor's output.
  // `bias_ok` says whether a bias operand's shape is a per-output-channel vector.
  bool epilogue(std::string t, const std::string& anchor, VendorActivation* act,
                std::optional<std::string>* bias,
                const std::function<bool(const Shape&)>& bias_ok) {
    if (const Node* r = op(t, "Relu", 1)) {
      *act = VendorActivation::Relu;
      t = r->inputs[0];
    } else if (gelu_input(t)) {
      // cuBLASLt's GELU epilogue is the tanh approximation (up to ~5e-4 from the erf
      // GELU the model computes): a vendor call must compute the stage exactly.
      why = "the epilogue is the erf GELU, and cuBLASLt's GELU is the tanh approximation";
      return false;
    }
    if (const Node* add = op(t, "Add", 2)) {
      for (int side = 0; side < 2 && !bias->has_value(); ++side) {
        const std::string& b = add->inputs[1 - side];
        if (add->inputs[side] == anchor && !producer(b) && g.tensor(b).dtype == DType::F32 &&
            bias_ok(g.tensor(b).shape)) {
          *bias = b;
          t = anchor;
        }
      }
    }
    if (t != anchor) {
      why = "the epilogue is not bias or ReLU";
      return false;
    }
    return true;
  }
};

bool leading_ones(const Shape& s, std::size_t keep) {
  for (std::size_t d = 0; d + keep < s.size(); ++d) {
    if (s[d] != 1) return false;
  }
  return true;
}

std::optional<VendorCall> match_gemm(
    Matcher& mt, const StageSpec& stage,
    const std::function<DeviceTensor(const std::string&)>& locate) {
  const Graph& g = mt.g;
  const Node& mm = *stage.roots.front();
  const std::string& c = mm.outputs[0];
  const Shape& as = g.tensor(mm.inputs[0]).shape;
  const Shape& ys = g.tensor(c).shape;
  if (as.size() < 2 || g.tensor(mm.inputs[1]).shape.size() < 2) {
    mt.why = "a 1-D MatMul operand";
    return std::nullopt;
  }
  VendorCall call;
  VendorGemm& gm = call.gemm;
  if (mt.producer(mm.inputs[0])) {
    mt.why = "A is computed inline (a prologue)";
    return std::nullopt;
  }
  std::string b = mm.inputs[1];
  if (const Node* t = mt.producer(b)) {
    bool swap = t->op_type == "Transpose" && !mt.producer(t->inputs[0]);
    const auto perm = swap ? transpose_perm(*t, g.tensor(t->inputs[0]).shape.size())
                           : std::vector<std::int64_t>{};
    for (std::size_t d = 0; swap && d < perm.size(); ++d) {
      const std::size_t want = d + 2 < perm.size() ? d : (d + 2 == perm.size() ? d + 1 : d - 1);
      swap = perm[d] == static_cast<std::int64_t>(want);
    }
    if (!swap) {
      mt.why = "B is computed inline (a prologue other than a transpose of the last axes)";
      return std::nullopt;
    }
    gm.transpose_b = true;
    b = t->inputs[0];
  }
  gm.m = as[as.size() - 2];
  gm.k = as.back();
  gm.n = ys.back();
  gm.batch = shape_numel(ys) / std::max<std::int64_t>(gm.m * gm.n, 1);
  // Each operand is one matrix for all batches or one per batch of the output.
  auto batch_stride = [&](const Shape& s, std::int64_t matrix, std::int64_t* stride) {
    const std::int64_t count = shape_numel(s) / std::max<std::int64_t>(matrix, 1);
    if (count == 1) {
      *stride = 0;
      return true;
    }
    if (s.size() != ys.size() || count != gm.batch) return false;
    *stride = matrix;
    return true;
  };
  if (!batch_stride(as, gm.m * gm.k, &gm.stride_a) ||
      !batch_stride(g.tensor(b).shape, gm.k * gm.n, &gm.stride_b)) {
    mt.why = "a partly broadcast batch";
    return std::nullopt;
  }
  gm.stride_c = gm.batch > 1 ? gm.m * gm.n : 0;
  std::optional<std::string> bias;
  const std::int64_t n = gm.n;
  if (!mt.epilogue(stage.stores.front(), c, &gm.activation, &bias, [&](const Shape& s) {
        return !s.empty() && s.back() == n && leading_ones(s, 1);
      })) {
    return std::nullopt;
  }
  gm.a = locate(mm.inputs[0]);
  gm.b = locate(b);
  gm.c = locate(stage.stores.front());
  if (bias) gm.bias = locate(*bias);
  return call;
}

std::optional<VendorCall> match_conv(
    Matcher& mt, const StageSpec& stage,
    const std::function<DeviceTensor(const std::string&)>& locate) {
  const Graph& g = mt.g;
  const Node& node = *stage.roots.front();
  const Shape& x = g.tensor(node.inputs[0]).shape;
  const Shape& w = g.tensor(node.inputs[1]).shape;
  if (x.size() != 4 || node.has_input(2)) {
    mt.why = "not a 2-D convolution without bias input";
    return std::nullopt;
  }
  if (mt.producer(node.inputs[0]) || mt.producer(node.inputs[1])) {
    mt.why = "an operand is computed inline (a prologue)";
    return std::nullopt;
  }
  const WindowGeometry geo = window_geometry(node, {x[2], x[3]}, {w[2], w[3]}, false);
  if (geo.pad_begin != geo.pad_end) {
    mt.why = "asymmetric padding";
    return std::nullopt;
  }
  VendorCall call;
  call.kind = VendorCall::Kind::Conv;
  VendorConv& cv = call.conv;
  cv.n = x[0];
  cv.c = x[1];
  cv.h = x[2];
  cv.wd = x[3];
  cv.k = w[0];
  cv.r = w[2];
  cv.s = w[3];
  cv.groups = node.attr_int("group", 1);
  cv.pad_h = geo.pad_begin[0];
  cv.pad_w = geo.pad_begin[1];
  cv.stride_h = geo.strides[0];
  cv.stride_w = geo.strides[1];
  cv.dil_h = geo.dilations[0];
  cv.dil_w = geo.dilations[1];
  std::optional<std::string> bias;
  const std::int64_t k = cv.k;
  auto per_channel = [&](const Shape& s) {
    // [k, 1, 1] or [1, k, 1, 1]
    return s.size() >= 3 && s[s.size() - 3] == k && s[s.size() - 2] == 1 && s.back() == 1 &&
           leading_ones(s, 3);
  };
  if (!mt.epilogue(stage.stores.front(), node.outputs[0], &cv.activation, &bias, per_channel)) {
    return std::nullopt;
  }
  cv.x = locate(node.inputs[0]);
  cv.w = locate(node.inputs[1]);
  cv.y = locate(stage.stores.front());
  if (bias) cv.bias = locate(*bias);
  return call;
}

}  // namespace

std::optional<VendorCall> match_vendor_call(
    const Graph& g, const StageSpec& stage,
    const std::function<const Node*(const std::string&)>& inline_producer,
    const std::function<DeviceTensor(const std::string&)>& locate, std::string* why) {
  Matcher mt{g, inline_producer, ""};
  std::optional<VendorCall> call;
  if (stage.roots.size() != 1 || stage.stores.size() != 1) {
    mt.why = "not one anchor with one stored result";
  } else {
    for (const auto& t : stage.roots.front()->inputs) {
      if (!t.empty() && g.tensor(t).dtype != DType::F32) mt.why = "not float32";
    }
    if (g.tensor(stage.stores.front()).dtype != DType::F32) mt.why = "not float32";
    if (!mt.why.empty()) {
    } else if (stage.family == Family::MatMul) {
      call = match_gemm(mt, stage, locate);
    } else if (stage.family == Family::Conv) {
      call = match_conv(mt, stage, locate);
    } else {
      mt.why = "not a MatMul or Conv stage";
    }
  }
  if (!call && why) *why = mt.why;
  return call;
}

}  // namespace orchid::codegen
