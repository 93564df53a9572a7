// Evaluates outer individuals on all cores: decode, then the inner sharding search,
// memoised by the decoded placement (many individuals decode to the same one). The inner
// search's seed derives from the placement, so results do not depend on which thread
// or in which order an individual is evaluated.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mapping/search/encoding.hpp"
#include "mapping/search/inner_search.hpp"

namespace orchid::mapping::search {

class MemoisedEvaluator {
 public:
  MemoisedEvaluator(const Problem& pb, const SearchOptions& options);

  // Latency of one individual; its complete mapping (with strategies) in `mapping`.
  double evaluate(const Outer& individual, Mapping& mapping);
  // Every individual, on options.threads threads (0 = all cores). Past the deadline the
  // rest stay unevaluated (infinite latency, empty mapping) so one generation of a huge
  // workload cannot overrun the search's time limit; the first is always evaluated.
  void evaluate_all(const std::vector<Outer>& individuals, std::vector<double>& fitness,
                    std::vector<Mapping>& mappings);

  void set_deadline(std::chrono::steady_clock::time_point deadline) { deadline_ = deadline; }

  std::size_t inner_runs() const { return runs_.load(); }
  std::size_t memo_hits() const { return hits_.load(); }

 private:
  const Problem& pb_;
  const SearchOptions& options_;
  int threads_ = 1;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::pair<std::vector<int>, Inner>> memo_;
  std::atomic<std::size_t> hits_{0}, runs_{0};
};

}  // namespace orchid::mapping::search
