// Memoised, parallel evaluation of outer individuals.
#include "mapping/search/memo_evaluator.hpp"

#include <algorithm>
#include <limits>
#include <thread>

#include "mapping/genetic_search.hpp"

namespace orchid::mapping::search {

MemoisedEvaluator::MemoisedEvaluator(const Problem& pb, const SearchOptions& options)
    : pb_(pb), options_(options) {
  threads_ =
      std::max(1, options.threads > 0 ? options.threads
                                      : static_cast<int>(std::thread::hardware_concurrency()));
}

double MemoisedEvaluator::evaluate(const Outer& o, Mapping& mapping_out) {
  std::vector<int> key;
  Mapping m = decode(pb_, o, key);
  const std::uint64_t h = hash_key(key);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = memo_.find(h);
    if (it != memo_.end() && it->second.first == key) {
      ++hits_;
      m.strategy = it->second.second.strategy;
      mapping_out = std::move(m);
      return it->second.second.latency;
    }
  }
  ++runs_;
  Inner in = inner_search(pb_.ev, m, options_, options_.seed ^ h);
  m.strategy = in.strategy;
  mapping_out = m;
  std::lock_guard<std::mutex> lock(mutex_);
  memo_.emplace(h, std::make_pair(key, in));
  return in.latency;
}

void MemoisedEvaluator::evaluate_all(const std::vector<Outer>& ps, std::vector<double>& fit,
                                     std::vector<Mapping>& maps) {
  fit.assign(ps.size(), 0);
  maps.assign(ps.size(), {});
  std::atomic<std::size_t> next{0};
  auto worker = [&]() {
    for (std::size_t i; (i = next++) < ps.size();) {
      const bool late = i > 0 && std::chrono::steady_clock::now() >= deadline_;
      fit[i] = late ? std::numeric_limits<double>::infinity() : evaluate(ps[i], maps[i]);
    }
  };
  std::vector<std::thread> pool;
  const int workers = std::min<int>(threads_, static_cast<int>(ps.size()));
  for (int t = 1; t < workers; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

}  // namespace orchid::mapping::search
