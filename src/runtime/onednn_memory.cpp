#include "runtime/onednn_memory.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "util/error.hpp"

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

StoredLayout stored_layout(const memory::desc& desc) {
  const dnnl_memory_desc_t& md = desc.data;
  const int ndims = md.ndims;
  if (md.format_kind != dnnl_blocked || md.data_type != dnnl_f32) {
    internal_error("stored_layout: not a blocked f32 layout");
  }
  const dnnl_blocking_desc_t& b = md.format_desc.blocking;
  std::vector<std::int64_t> block(static_cast<std::size_t>(ndims), 1);  // inner block per dim
  for (int k = 0; k < b.inner_nblks; ++k)
    block[static_cast<std::size_t>(b.inner_idxs[k])] *= b.inner_blks[k];
  for (int d = 0; d < ndims; ++d) {
    if (md.padded_dims[d] != md.dims[d] || md.padded_offsets[d] != 0) {
      internal_error("stored_layout: a padded layout");
    }
  }
  StoredLayout out;
  // Storage dims: the outer dims by decreasing stride, then the inner blocks.
  std::vector<int> outer(static_cast<std::size_t>(ndims));
  std::iota(outer.begin(), outer.end(), 0);
  std::stable_sort(outer.begin(), outer.end(),
                   [&](int x, int y) { return b.strides[x] > b.strides[y]; });
  for (int d : outer) out.storage_dims.push_back(md.dims[d] / block[static_cast<std::size_t>(d)]);
  for (int k = 0; k < b.inner_nblks; ++k) out.storage_dims.push_back(b.inner_blks[k]);
  std::int64_t numel = 1;
  for (int d = 0; d < ndims; ++d) numel *= md.dims[d];
  if (numel > std::numeric_limits<std::int32_t>::max()) {
    internal_error("stored_layout: {} elements need offsets wider than 32 bits", numel);
  }
  out.offsets.resize(static_cast<std::size_t>(numel));
  std::vector<std::int64_t> index(static_cast<std::size_t>(ndims), 0);
  std::vector<std::int64_t> rest(static_cast<std::size_t>(ndims));
  for (std::int64_t i = 0; i < numel; ++i) {
    std::int64_t off = 0;
    for (int d = 0; d < ndims; ++d) {
      const auto du = static_cast<std::size_t>(d);
      off += index[du] / block[du] * b.strides[d];
      rest[du] = index[du] % block[du];
    }
    std::int64_t stride = 1;
    for (int k = b.inner_nblks; k-- > 0;) {
      const auto d = static_cast<std::size_t>(b.inner_idxs[k]);
      off += rest[d] % b.inner_blks[k] * stride;
      rest[d] /= b.inner_blks[k];
      stride *= b.inner_blks[k];
    }
    out.offsets[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(off);
    for (int d = ndims; d-- > 0;) {  // next logical index, row-major
      if (++index[static_cast<std::size_t>(d)] < md.dims[d]) break;
      index[static_cast<std::size_t>(d)] = 0;
    }
  }
  return out;
}

bool is_reference_implementation(std::string_view impl_info) {
  return impl_info.starts_with("ref");
}

}  // namespace orchid
