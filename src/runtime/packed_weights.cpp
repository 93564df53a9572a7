#include "runtime/packed_weights.hpp"

#include <algorithm>

#include "util/error.hpp"

namespace orchid {

namespace {

// `from`'s bytes reordered into `to` on `engine`, whose stream this is (a copy may have
// been packed by another executor's engine).
void reorder_into(const dnnl::engine& engine, dnnl::stream& stream, const dnnl::memory& from,
                  dnnl::memory& to) {
  dnnl::memory source(from.get_desc(), engine, from.get_data_handle());
  dnnl::reorder(source, to).execute(stream, source, to);
  stream.wait();
}

std::shared_ptr<dnnl::memory> reordered(const dnnl::engine& engine, dnnl::stream& stream,
                                        const dnnl::memory& from,
                                        const dnnl::memory::desc& layout) {
  auto to = std::make_shared<dnnl::memory>(layout, engine);
  reorder_into(engine, stream, from, *to);
  return to;
}

}  // namespace

std::shared_ptr<const dnnl::memory> PackedWeights::get(const dnnl::engine& engine,
                                                       dnnl::stream& stream,
                                                       const std::string& name, const Tensor& value,
                                                       const dnnl::memory::desc& plain,
                                                       const dnnl::memory::desc& layout) {
  std::erase_if(entries_, [](const Entry& e) { return e.copy.expired(); });
  for (const Entry& e : entries_) {
    if (e.name == name && e.value == &value && e.layout == layout) return e.copy.lock();
  }
  std::shared_ptr<dnnl::memory> packed;
  if (auto h = held_.find(name); h != held_.end()) {
    packed = reordered(engine, stream, *h->second.copy, layout);
  } else {
    if (!value.raw()) internal_error("packed weights: '{}' has no value to pack", name);
    const dnnl::memory user(plain, engine, const_cast<std::byte*>(value.raw()));
    packed = reordered(engine, stream, user, layout);
  }
  entries_.push_back({name, &value, plain, layout, packed});
  return packed;
}

bool PackedWeights::release(const std::string& name) {
  if (!graph_) return false;
  if (held_.count(name)) return true;
  if (auto r = plain_readers_.find(name); r != plain_readers_.end() && r->second > 0) return false;
  const std::shared_ptr<const Tensor> value = graph_->tensor(name).data;
  for (const Entry& e : entries_) {
    if (e.name != name || e.value != value.get()) continue;
    if (auto copy = e.copy.lock()) {
      if (!graph_->release_constant(name, value.get())) return false;
      held_[name] = {std::move(copy), e.plain};
      // The copies now stand for the released value (an empty view).
      const Tensor* now = graph_->tensor(name).data.get();
      for (Entry& other : entries_) {
        if (other.name == name && other.value == value.get()) other.value = now;
      }
      return true;
    }
  }
  return false;
}

void PackedWeights::restore(const dnnl::engine& engine, dnnl::stream& stream,
                            const std::string& name) {
  auto h = held_.find(name);
  if (h == held_.end() || !graph_) return;
  const TensorInfo& info = graph_->tensor(name);
  Tensor value(info.dtype, info.shape);
  if (value.nbytes() != h->second.plain.get_size()) {
    internal_error("packed weights: '{}' holds {} bytes, its plain layout {}", name, value.nbytes(),
                   h->second.plain.get_size());
  }
  dnnl::memory user(h->second.plain, engine, value.raw());
  reorder_into(engine, stream, *h->second.copy, user);
  const Tensor* released = info.data.get();
  const Tensor* restored = graph_->set_constant(name, std::move(value)).data.get();
  // The packed copies stand for the new value as they did for the old one.
  for (Entry& e : entries_) {
    if (e.name == name && e.value == released) e.value = restored;
  }
  held_.erase(h);
}

void PackedWeights::remove_plain_reader(const std::string& name) {
  auto r = plain_readers_.find(name);
  if (r != plain_readers_.end() && --r->second <= 0) plain_readers_.erase(r);
}

}  // namespace orchid
