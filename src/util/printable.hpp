// Text from input files (tensor, node and key names) quoted in messages: control
// characters and invalid bytes are escaped so a name cannot rewrite the terminal.
#pragma once

#include <string>
#include <string_view>

namespace orchid {

// Bytes below 0x20, 0x7f and bytes >= 0x80 that are not valid UTF-8 become \xNN;
// newline, tab and carriage return become \n, \t, \r.
std::string printable(std::string_view text);

}  // namespace orchid
