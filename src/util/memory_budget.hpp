// The most bytes one model may ask orchid to allocate (weights, inputs, any one tensor).
// Checked before allocating, so a 100-byte model declaring a 2^40-element weight is an
// error naming the tensor instead of an out-of-memory abort. Default: physical memory.
#pragma once

#include <cstdint>
#include <string>

namespace orchid {

std::int64_t physical_memory_bytes();
std::int64_t memory_budget();
// bytes <= 0 restores the default (physical memory).
void set_memory_budget(std::int64_t bytes);
// Fails with "<what> needs N bytes, more than the memory budget of M bytes".
void check_memory_budget(std::int64_t bytes, const std::string& what);

}  // namespace orchid
