#include "codegen/write_sources.hpp"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "util/atomic_file.hpp"
#include "util/error.hpp"

namespace orchid::codegen {

namespace {

nlohmann::json tensor_json(const DeviceTensor& t) {
  return {{"name", t.name},
          {"region", region_name(t.region)},
          {"offset", t.offset},
          {"dtype", std::string(dtype_name(t.dtype))},
          {"shape", t.shape}};
}

}  // namespace

std::string write_program_sources(const DeviceProgram& program, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail("--out: cannot create '{}': {}", dir, ec.message());
  const bool cuda = program.target == Target::Cuda;
  const std::string source_name = cuda ? "plan.cu" : "plan.cl";
  auto path = [&](const std::string& name) { return (std::filesystem::path(dir) / name).string(); };
  std::string written;
  auto write = [&](const std::string& name, std::string_view content) {
    write_file_atomically(path(name), content);
    written += path(name) + "\n";
  };
  write(source_name, program.source);

  nlohmann::json j;
  j["format"] = "orchid-device-program";
  j["target"] = std::string(target_name(program.target));
  j["block"] = 256;
  j["buffers"] = {{"arena", program.arena_bytes},
                  {"scratch", program.scratch_bytes},
                  {"weights", program.weights_bytes},
                  {"inputs", program.inputs_bytes}};
  j["kernel_arguments"] = {"arena", "weights", "scratch", "inputs"};
  for (const auto& l : program.launches) {
    j["launches"].push_back({{"kernel", l.name},
                             {"family", l.family},
                             {"groups", l.groups},
                             {"plan_kernel", l.plan_kernel},
                             {"ops", l.ops},
                             {"vector_width", l.vector_width}});
  }
  for (const auto& c : program.constants) {
    j["constants"].push_back({{"name", c.name}, {"offset", c.offset}, {"bytes", c.data->nbytes()}});
  }
  for (const auto& t : program.inputs) j["inputs"].push_back(tensor_json(t));
  for (const auto& t : program.outputs) j["outputs"].push_back(tensor_json(t));
  write("launches.json", j.dump(1) + "\n");

  std::string blob(static_cast<std::size_t>(program.weights_bytes), '\0');
  for (const auto& c : program.constants) {
    std::memcpy(blob.data() + c.offset, c.data->raw(), c.data->nbytes());
  }
  write("weights.bin", blob);

  std::string make;
  if (cuda) {
    make =
        "# Compiles the generated kernels to cubins for Ampere and Hopper.\n"
        "NVCC ?= nvcc\n"
        "all: plan_sm80.cubin plan_sm90.cubin\n"
        "plan_sm%.cubin: plan.cu\n"
        "\t$(NVCC) -cubin -arch=sm_$* -std=c++17 -o $@ $<\n"
        "clean:\n\trm -f plan_sm*.cubin\n";
  } else {
    make =
        "# Syntax-checks the generated OpenCL C with clang (the orchid runtime compiles it\n"
        "# with the OpenCL driver at run time).\n"
        "CLANG ?= clang\n"
        "all: plan.bc\n"
        "plan.bc: plan.cl\n"
        "\t$(CLANG) -x cl -cl-std=CL1.2 -Xclang -finclude-default-header -c -emit-llvm "
        "-o $@ $<\n"
        "clean:\n\trm -f plan.bc\n";
  }
  write("Makefile", make);
  return written;
}

}  // namespace orchid::codegen
