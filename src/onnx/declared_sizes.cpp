#include "onnx/declared_sizes.hpp"

#include <onnx/onnx_pb.h>

#include "ir/shape.hpp"
#include "onnx/tensor_proto.hpp"
#include "util/checked_math.hpp"
#include "util/error.hpp"
#include "util/memory_budget.hpp"

namespace orchid {

namespace {

class SizeCounter {
 public:
  explicit SizeCounter(const std::string& path) : path_(path) {}

  void graph(const onnx::GraphProto& g) {
    for (const auto& t : g.initializer()) tensor(t, t.name());
    for (const auto& node : g.node()) {
      for (const auto& a : node.attribute()) {
        if (a.has_t()) tensor(a.t(), node.output_size() ? node.output(0) : a.t().name());
        for (const auto& t : a.tensors()) tensor(t, t.name());
        if (a.has_g()) graph(a.g());
        for (const auto& sub : a.graphs()) graph(sub);
      }
    }
  }

  std::int64_t total() const { return total_; }

 private:
  void tensor(const onnx::TensorProto& t, const std::string& name) {
    const auto dtype = dtype_from_onnx(t.data_type());
    if (!dtype) return;  // refused with its name when it is read
    const std::string what = fmt::format("'{}': tensor '{}'", path_, name);
    const Shape dims(t.dims().begin(), t.dims().end());
    const std::int64_t bytes = checked_nbytes(dims, dtype_size(*dtype), what);
    check_memory_budget(bytes,
                        fmt::format("{} ({} {})", what, dtype_name(*dtype), shape_to_string(dims)));
    total_ = checked_add(total_, bytes, fmt::format("'{}': the model's constants", path_));
  }

  const std::string& path_;
  std::int64_t total_ = 0;
};

}  // namespace

void check_declared_sizes(const onnx::ModelProto& model, const std::string& path) {
  SizeCounter counter(path);
  counter.graph(model.graph());
  check_memory_budget(counter.total(), fmt::format("'{}': the model's constants", path));
}

}  // namespace orchid
