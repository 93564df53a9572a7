#include "util/memory_budget.hpp"

#include <unistd.h>

#include <atomic>
#include <climits>

#include "util/error.hpp"

namespace orchid {

namespace {
std::atomic<std::int64_t> configured_budget{0};  // 0: physical memory
}  // namespace

std::int64_t physical_memory_bytes() {
  static const std::int64_t bytes = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0 || pages > INT64_MAX / page) return std::int64_t{INT64_MAX};
    return static_cast<std::int64_t>(pages) * page;
  }();
  return bytes;
}

std::int64_t memory_budget() {
  const std::int64_t configured = configured_budget.load();
  return configured > 0 ? configured : physical_memory_bytes();
}

void set_memory_budget(std::int64_t bytes) {
  configured_budget.store(bytes > 0 ? bytes : 0);
}

void check_memory_budget(std::int64_t bytes, const std::string& what) {
  const std::int64_t budget = memory_budget();
  if (bytes > budget) {
    fail("{} needs {} bytes, more than the memory budget of {} bytes", what, bytes, budget);
  }
}

}  // namespace orchid
