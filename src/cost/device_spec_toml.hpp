// Writes a DeviceSpec back as a device TOML in the format load_device_spec() reads
// (configs/devices/*.toml), every key present; numbers round-trip exactly.
#pragma once

#include <string>

#include "cost/device_spec.hpp"

namespace orchid {

// `header`: comment text put at the top (each line gets "# ").
std::string device_spec_to_toml(const DeviceSpec& device, const std::string& header = "");

}  // namespace orchid
