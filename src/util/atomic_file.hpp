// Atomic file writes: the content goes to a temporary file in the target's folder,
// which is then renamed over the target, so readers never see a half-written file.
#pragma once

#include <string>
#include <string_view>

namespace orchid {

void write_file_atomically(const std::string& path, std::string_view content);

}  // namespace orchid
