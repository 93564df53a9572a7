// Atomic file writes: the content goes to a temporary file in the target's folder,
// which is then renamed over the target, so readers never see a half-written file.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace orchid {

void write_file_atomically(const std::string& path, std::string_view content);

// Several files, all or none: every content goes to its temporary file first; only when
// all of them are written are they renamed into place. Two entries naming the same path
// are an error before anything is written.
void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace orchid
