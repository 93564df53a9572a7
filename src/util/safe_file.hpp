// Reading files named by untrusted input. Only regular files are read (a FIFO would block
// forever, /dev/zero never ends, a directory is no file), sizes are bounded before
// anything is allocated, and paths that a model names are confined to its folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace orchid {

// Opens `path` for reading without blocking on FIFOs; fails unless it is a regular file
// of at most `max_bytes`. Returns the whole content. `what` names the file's role in
// errors ("system file", "--input x").
std::string read_regular_file(const std::string& path, std::int64_t max_bytes,
                              const std::string& what);

// `location` (relative, from a file in `folder`) resolved with every symlink followed;
// fails unless the result lies inside `folder` (also resolved). `context` prefixes errors.
std::string confined_path(const std::string& folder, const std::string& location,
                          const std::string& context);

// Reads `length` bytes at `offset` of the regular file `path` (a confined_path result)
// into `out`, opened without following a final symlink; fails on anything else or a
// short file, before writing to `out`.
void read_file_range(const std::string& path, std::int64_t offset, std::int64_t length, void* out,
                     const std::string& context);

// `length` bytes at `offset` of the regular file `path`, checked as read_file_range
// checks them, mapped privately (copy on write: the file never changes) instead of read:
// pages nothing touches are never loaded, and they all go back to the system once `owner`
// (which every holder of `data` keeps) is gone. nullopt where the system refuses the
// mapping (the caller reads instead). The file must not shrink while mapped.
struct MappedRange {
  std::byte* data = nullptr;
  std::shared_ptr<void> owner;
};
std::optional<MappedRange> map_file_range(const std::string& path, std::int64_t offset,
                                          std::int64_t length, const std::string& context);

// Size of a regular file (not following a final symlink), or -1 if it is not one.
std::int64_t regular_file_size(const std::string& path);

}  // namespace orchid
