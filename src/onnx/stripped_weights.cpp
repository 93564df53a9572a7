#include "onnx/stripped_weights.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ir/dtype.hpp"
#include "onnx/declared_sizes.hpp"
#include "onnx/proto_io.hpp"
#include "onnx/tensor_proto.hpp"
#include "util/checked_math.hpp"
#include "util/error.hpp"
#include "util/memory_budget.hpp"

namespace orchid {

namespace {

std::uint64_t fnv1a64(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// splitmix64: tiny, fully specified, identical everywhere.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t state_;
};

struct Uniform {
  double lo;
  double hi;
};

struct Use {
  const onnx::NodeProto* node = nullptr;
  int input = -1;
};

using FirstUses = std::map<std::string, Use>;

FirstUses first_uses(const onnx::GraphProto& graph) {
  FirstUses uses;
  for (const auto& node : graph.node()) {
    for (int i = 0; i < node.input_size(); ++i) {
      if (!node.input(i).empty()) uses.try_emplace(node.input(i), Use{&node, i});
    }
  }
  return uses;
}

// The role-deciding consumer, looking through ops that do not change the values' role.
Use role_use(const FirstUses& uses, const std::string& name) {
  std::string current = name;
  for (int hops = 0; hops < 8; ++hops) {
    auto it = uses.find(current);
    if (it == uses.end()) return {};
    const auto& op = it->second.node->op_type();
    if ((op != "Identity" && op != "Cast") || it->second.node->output_size() == 0) {
      return it->second;
    }
    current = it->second.node->output(0);
  }
  return {};
}

std::int64_t int_attr(const onnx::NodeProto& node, const char* key, std::int64_t fallback) {
  for (const auto& a : node.attribute()) {
    if (a.name() == key) return a.i();
  }
  return fallback;
}

// Saturates instead of overflowing: the result only scales an initialisation range.
std::int64_t ints_attr_product(const onnx::NodeProto& node, const char* key) {
  std::int64_t p = 1;
  for (const auto& a : node.attribute()) {
    if (a.name() == key) {
      for (auto v : a.ints())
        p = mul_no_overflow(p, std::max<std::int64_t>(v, 1)).value_or(INT64_MAX);
    }
  }
  return p;
}

// Dims were checked by checked_numel before (regenerate), so the product fits.
std::int64_t product(const std::vector<std::int64_t>& dims, std::size_t from) {
  std::int64_t p = 1;
  for (std::size_t i = from; i < dims.size(); ++i) p *= dims[i];
  return p;
}

// Fan-in of a linear op's weight, or 0 when the tensor is not a weight of the op.
std::int64_t fan_in(const Use& use, const std::vector<std::int64_t>& dims) {
  const auto& op = use.node->op_type();
  const std::size_t rank = dims.size();
  if (op == "Conv" && use.input == 1) return product(dims, 1);
  if (op == "ConvTranspose" && use.input == 1 && rank >= 1) {
    const std::int64_t groups = std::max<std::int64_t>(int_attr(*use.node, "group", 1), 1);
    const std::int64_t fan =
        dims[0] / groups * product(dims, 2) / ints_attr_product(*use.node, "strides");
    return std::max<std::int64_t>(fan, 1);
  }
  if (op == "Gemm" && rank == 2 && (use.input == 0 || use.input == 1)) {
    const bool transposed = int_attr(*use.node, use.input == 0 ? "transA" : "transB", 0) != 0;
    // B [K,N] (A [M,K] transposed likewise): K is the reduced axis.
    const bool k_first = (use.input == 1) != transposed;
    return k_first ? dims[0] : dims[1];
  }
  if (op == "MatMul" && rank >= 1 && (use.input == 0 || use.input == 1)) {
    if (use.input == 0 || rank == 1) return dims[rank - 1];  // A [.., M, K] or B [K]
    return dims[rank - 2];                                   // B [.., K, N]
  }
  return 0;
}

Uniform role_distribution(const Use& use, const std::vector<std::int64_t>& dims) {
  if (!use.node) return {-0.05, 0.05};
  if (const std::int64_t fan = fan_in(use, dims); fan > 0) {
    const double a = std::sqrt(3.0 / static_cast<double>(fan));
    return {-a, a};
  }
  const auto& op = use.node->op_type();
  const int i = use.input;
  if ((op == "Conv" || op == "ConvTranspose" || op == "Gemm") && i == 2) return {-0.1, 0.1};
  if (op == "Add") return {-0.1, 0.1};
  if (op == "BatchNormalization") {
    switch (i) {
      case 1:
        return {0.8, 1.2};
      case 2:
        return {-0.1, 0.1};
      case 3:
        return {-0.1, 0.1};
      case 4:
        return {0.5, 1.5};
      default:
        break;
    }
  }
  if (op == "LayerNormalization" || op == "InstanceNormalization") {
    if (i == 1) return {0.8, 1.2};
    if (i == 2) return {-0.1, 0.1};
  }
  if (op == "Mul") return {0.8, 1.2};
  if (op == "PRelu" && i == 1) return {0.1, 0.3};
  if (op == "Gather" && i == 0) return {-0.1, 0.1};
  return {-0.05, 0.05};
}

bool regenerable_dtype(std::int32_t type) {
  return type == onnx::TensorProto::FLOAT || type == onnx::TensorProto::FLOAT16 ||
         type == onnx::TensorProto::DOUBLE;
}

// Overwrites the tensor's data with its deterministic values, inline.
void regenerate(onnx::TensorProto& tensor, Uniform range) {
  std::vector<std::int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  const auto dtype = *dtype_from_onnx(tensor.data_type());
  const std::string what = "stripped weight '" + tensor.name() + "'";
  const std::int64_t n = checked_numel(dims, what);
  const std::int64_t nbytes = checked_nbytes(dims, dtype_size(dtype), what);
  check_memory_budget(nbytes, what);
  std::string bytes(static_cast<std::size_t>(nbytes), '\0');
  SplitMix64 rng(fnv1a64(tensor.name()));
  const double center = 0.5 * (range.lo + range.hi);
  const double half = 0.5 * (range.hi - range.lo);
  for (std::int64_t k = 0; k < n; ++k) {
    const double u = static_cast<double>(rng.next() >> 40) * 0x1p-24;  // exact
    const double v = std::fma(half, 2.0 * u - 1.0, center);            // one rounding
    char* out = bytes.data() + k * static_cast<std::int64_t>(dtype_size(dtype));
    if (dtype == DType::F64) {
      std::memcpy(out, &v, 8);
    } else if (dtype == DType::F32) {
      const auto f = static_cast<float>(v);
      std::memcpy(out, &f, 4);
    } else {
      const std::uint16_t h = float_to_half(static_cast<float>(v));
      std::memcpy(out, &h, 2);
    }
  }
  tensor.clear_external_data();
  tensor.clear_data_location();
  tensor.set_raw_data(std::move(bytes));
}

bool is_stripped(const onnx::ModelProto& model) {
  for (const auto& p : model.metadata_props()) {
    if (p.key() == kStrippedWeightsKey && p.value() == kStrippedWeightsValue) return true;
  }
  return false;
}

bool side_file_missing(const onnx::TensorProto& t, const std::string& base_dir) {
  if (!has_external_data(t) || !regenerable_dtype(t.data_type())) return false;
  const std::string file = external_data_path(t, base_dir, "stripped weight '" + t.name() + "'");
  std::error_code ec;
  return !std::filesystem::exists(file, ec);
}

}  // namespace

int regenerate_stripped_weights(onnx::ModelProto& model, const std::string& base_dir) {
  if (!is_stripped(model)) return 0;
  onnx::GraphProto& graph = *model.mutable_graph();
  const FirstUses uses = first_uses(graph);
  int count = 0;
  auto visit = [&](onnx::TensorProto& t, const std::string& name) {
    if (!side_file_missing(t, base_dir)) return;
    t.set_name(name);  // the seed is the tensor's graph name
    std::vector<std::int64_t> dims(t.dims().begin(), t.dims().end());
    checked_numel(dims, "stripped weight '" + name + "'");  // before fan_in multiplies dims
    regenerate(t, role_distribution(role_use(uses, name), dims));
    ++count;
  };
  for (auto& init : *graph.mutable_initializer()) visit(init, init.name());
  for (auto& node : *graph.mutable_node()) {
    if (node.op_type() != "Constant" || node.output_size() != 1) continue;
    for (auto& a : *node.mutable_attribute()) {
      if (a.name() == "value" && a.has_t()) visit(*a.mutable_t(), node.output(0));
    }
  }
  return count;
}

void materialize_stripped_weights(const std::string& in_path, const std::string& out_path) {
  onnx::ModelProto model = load_model_proto(in_path);
  check_declared_sizes(model, in_path);
  const std::string base_dir = model_folder(in_path);
  regenerate_stripped_weights(model, base_dir);
  // Inline whatever still lives in side files, so OUT stands alone in any folder.
  auto inline_tensor = [&](onnx::TensorProto& t) {
    if (!has_external_data(t)) return;
    const Tensor value =
        tensor_from_proto(t, base_dir, fmt::format("'{}': tensor '{}'", in_path, t.name()));
    tensor_to_proto(value, t);
  };
  auto& graph = *model.mutable_graph();
  for (auto& init : *graph.mutable_initializer()) inline_tensor(init);
  for (auto& node : *graph.mutable_node()) {
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_t()) inline_tensor(*a.mutable_t());
    }
  }
  auto& props = *model.mutable_metadata_props();
  for (int i = props.size() - 1; i >= 0; --i) {
    if (props[i].key() == kStrippedWeightsKey) props.DeleteSubrange(i, 1);
  }
  save_model_proto(model, out_path);
}

}  // namespace orchid
