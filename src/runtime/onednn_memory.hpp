// oneDNN memory descriptors for orchid's f32 tensors: plain row-major, channels-last, or
// left for the primitive to choose.
#pragma once

#include <cstddef>
#include <string_view>

#include <oneapi/dnnl/dnnl.hpp>

#include "ir/shape.hpp"
#include "runtime/fused/fused_loop.hpp"

namespace orchid {

dnnl::memory::dims to_dims(const Shape& s);
// Right-aligns `shape` to `rank` with leading ones.
dnnl::memory::dims padded_dims(const Shape& shape, std::size_t rank);
dnnl::memory::desc plain_desc(const dnnl::memory::dims& dims);
dnnl::memory::desc nhwc_desc(const dnnl::memory::dims& dims);
dnnl::memory::desc any_desc(const dnnl::memory::dims& dims);

// Where each element of a tensor stored as `desc` (a blocked layout without padding:
// plain, NHWC, nChw8c, ...) lies, for fused loops that read or write it in place.
StoredLayout stored_layout(const dnnl::memory::desc& desc);

// Whether oneDNN's choice (impl_info_str: "ref:any", "brgconv:avx512_core", ...) is its
// reference implementation: correct but often 10-100x slower than its JIT kernels, so a
// caller takes another form where one has a JIT kernel.
bool is_reference_implementation(std::string_view impl_info);

}  // namespace orchid
