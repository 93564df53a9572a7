#include "runtime/onednn_memory.hpp"

namespace orchid {

using dnnl::memory;

memory::dims to_dims(const Shape& s) {
  return memory::dims(s.begin(), s.end());
}

memory::dims padded_dims(const Shape& shape, std::size_t rank) {
  memory::dims d(rank, 1);
  for (std::size_t i = 0; i < shape.size(); ++i) d[rank - shape.size() + i] = shape[i];
  return d;
}

memory::desc plain_desc(const memory::dims& dims) {
  memory::dims strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return memory::desc(dims, memory::data_type::f32, strides);
}

memory::desc nhwc_desc(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, memory::format_tag::nhwc);
}

memory::desc any_desc(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, memory::format_tag::any);
}

}  // namespace orchid
