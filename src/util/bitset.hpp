// A fixed-size dynamic bitset with the few operations reachability and candidate
// enumeration need (std::vector<bool> has no word-wise AND/OR).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace orchid {

class Bitset {
 public:
  Bitset() = default;
  explicit Bitset(std::size_t size) : size_(size), words_((size + 63) / 64, 0) {}

  std::size_t size() const { return size_; }
  void set(std::size_t i) { words_[i >> 6] |= std::uint64_t{1} << (i & 63); }
  void reset(std::size_t i) { words_[i >> 6] &= ~(std::uint64_t{1} << (i & 63)); }
  bool test(std::size_t i) const { return (words_[i >> 6] >> (i & 63)) & 1u; }

  Bitset& operator|=(const Bitset& o) {
    for (std::size_t w = 0; w < words_.size(); ++w) words_[w] |= o.words_[w];
    return *this;
  }
  Bitset& operator&=(const Bitset& o) {
    for (std::size_t w = 0; w < words_.size(); ++w) words_[w] &= o.words_[w];
    return *this;
  }
  // this & ~o
  Bitset& subtract(const Bitset& o) {
    for (std::size_t w = 0; w < words_.size(); ++w) words_[w] &= ~o.words_[w];
    return *this;
  }
  bool any() const {
    for (auto w : words_) {
      if (w) return true;
    }
    return false;
  }
  bool intersects(const Bitset& o) const {
    for (std::size_t w = 0; w < words_.size(); ++w) {
      if (words_[w] & o.words_[w]) return true;
    }
    return false;
  }
  std::size_t count() const {
    std::size_t n = 0;
    for (auto w : words_) n += static_cast<std::size_t>(std::popcount(w));
    return n;
  }
  template <typename F>
  void for_each(F&& f) const {
    for (std::size_t w = 0; w < words_.size(); ++w) {
      std::uint64_t bits = words_[w];
      while (bits) {
        f(w * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
        bits &= bits - 1;
      }
    }
  }
  bool operator==(const Bitset& o) const = default;

 private:
  std::size_t size_ = 0;
  std::vector<std::uint64_t> words_;
};

}  // namespace orchid
