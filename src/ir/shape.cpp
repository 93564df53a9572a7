#include "ir/shape.hpp"

#include <algorithm>

#include "util/checked_math.hpp"
#include "util/error.hpp"

namespace orchid {

std::int64_t checked_numel(const Shape& shape, const std::string& context) {
  std::int64_t n = 1;
  std::int64_t bound = 1;  // product with zeros counted as 1: every stride is below it
  for (auto d : shape) {
    if (d < 0) fail("{}: shape {} has a negative dimension", context, shape_to_string(shape));
    const auto next = mul_no_overflow(bound, std::max<std::int64_t>(d, 1));
    if (!next || *next > kMaxElements) {
      fail("{}: shape {} has too many elements (more than {})", context, shape_to_string(shape),
           kMaxElements);
    }
    bound = *next;
    n *= d;
  }
  return n;
}

std::int64_t checked_nbytes(const Shape& shape, std::size_t element_size,
                            const std::string& context) {
  return checked_numel(shape, context) * static_cast<std::int64_t>(element_size);
}

std::int64_t shape_numel(const Shape& shape) {
  return checked_numel(shape, "tensor");
}

std::string shape_to_string(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string out;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) out += 'x';
    out += std::to_string(shape[i]);
  }
  return out;
}

std::vector<std::int64_t> shape_strides(const Shape& shape) {
  std::vector<std::int64_t> strides(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& context) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      fail("{}: shapes {} and {} cannot be broadcast", context, shape_to_string(a),
           shape_to_string(b));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank, const std::string& context) {
  if (axis < -rank || axis >= std::max<std::int64_t>(rank, 1)) {
    fail("{}: axis {} is out of range for rank {}", context, axis, rank);
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace orchid
