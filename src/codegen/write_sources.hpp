// `orchid codegen --out DIR`: the generated program as files for inspection and
// standalone use: the kernels (plan.cu or plan.cl), the launch sequence and buffer
// layout (launches.json), the constants (weights.bin, at the offsets launches.json
// lists) and a build file (Makefile: nvcc -cubin for sm_80/sm_90, or an OpenCL syntax
// check with clang when present).
#pragma once

#include <string>

#include "codegen/device_program.hpp"

namespace orchid::codegen {

// Writes the files atomically; returns the paths written, one per line.
std::string write_program_sources(const DeviceProgram& program, const std::string& dir);

}  // namespace orchid::codegen
