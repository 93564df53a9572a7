#include "runtime/packed_weights.hpp"

#include <algorithm>

namespace orchid {

std::shared_ptr<const dnnl::memory> PackedWeights::get(const dnnl::engine& engine,
                                                       dnnl::stream& stream, const Tensor& value,
                                                       const dnnl::memory::desc& plain,
                                                       const dnnl::memory::desc& layout) {
  std::erase_if(entries_, [](const Entry& e) { return e.copy.expired(); });
  for (const Entry& e : entries_) {
    if (e.value == &value && e.layout == layout) return e.copy.lock();
  }
  dnnl::memory user(plain, engine, const_cast<std::byte*>(value.raw()));
  auto packed = std::make_shared<dnnl::memory>(layout, engine);
  dnnl::reorder(user, *packed).execute(stream, user, *packed);
  stream.wait();
  entries_.push_back({&value, layout, packed});
  return packed;
}

}  // namespace orchid
