// NVRTC: generated CUDA source to a cubin for one architecture, no GPU needed. The library
// is loaded with dlopen when the first kernel is compiled, as the driver is
// (cuda_executor.cpp): linked, it was mapped into every run and held 28 MB of resident
// memory on the CPU path too (a third of MobileNetV2's), and a machine without the toolkit's
// runtime could not start orchid at all. Types come from the toolkit's header.
#include <dlfcn.h>
#include <nvrtc.h>

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <functional>

#include "codegen/cuda_backend.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/safe_file.hpp"

namespace orchid::codegen {

namespace {

#define ORCHID_NVRTC_STR(x) #x
// clang-format off
#define ORCHID_NVRTC_LIST(X) \
  X(nvrtcCreateProgram) \
  X(nvrtcCompileProgram) \
  X(nvrtcGetProgramLogSize) \
  X(nvrtcGetProgramLog) \
  X(nvrtcGetCUBINSize) \
  X(nvrtcGetCUBIN) \
  X(nvrtcDestroyProgram) \
  X(nvrtcVersion)
// clang-format on

struct Nvrtc {
  void* handle = nullptr;
#define ORCHID_NVRTC(fn) decltype(&fn) fn##_p = nullptr;
  ORCHID_NVRTC_LIST(ORCHID_NVRTC)
#undef ORCHID_NVRTC
  std::string error;

  // The toolkit's runtime by soname (LD_LIBRARY_PATH, the loader's cache), else where the
  // build found it.
  Nvrtc() {
    const std::string soname = "libnvrtc.so." ORCHID_NVRTC_MAJOR;
    for (const char* name : {soname.c_str(), ORCHID_NVRTC_LIBRARY}) {
      if ((handle = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    }
    if (!handle) {
      error = fmt::format("NVRTC ({}) is not installed", soname);
      return;
    }
#define ORCHID_NVRTC(fn)                                                         \
  fn##_p = reinterpret_cast<decltype(&fn)>(dlsym(handle, ORCHID_NVRTC_STR(fn))); \
  if (!fn##_p && error.empty()) error = soname + " lacks " ORCHID_NVRTC_STR(fn);
    ORCHID_NVRTC_LIST(ORCHID_NVRTC)
#undef ORCHID_NVRTC
  }
};

// Loaded once, on first use; fails with the reason when it cannot be.
const Nvrtc& nvrtc() {
  static const Nvrtc n;
  if (!n.error.empty()) fail("{}: compiling CUDA kernels (--device cuda) needs it", n.error);
  return n;
}

}  // namespace

bool cuda_built() {
  return true;
}

NvrtcResult nvrtc_compile(const std::string& source, int arch) {
  const Nvrtc& lib = nvrtc();
  NvrtcResult result;
  nvrtcProgram prog = nullptr;
  if (lib.nvrtcCreateProgram_p(&prog, source.c_str(), "orchid_plan.cu", 0, nullptr, nullptr) !=
      NVRTC_SUCCESS) {
    fail("NVRTC: cannot create a program");
  }
  const std::string gpu = fmt::format("--gpu-architecture=sm_{}", arch);
  const char* options[] = {gpu.c_str(), "--std=c++17", "-default-device"};
  const nvrtcResult status = lib.nvrtcCompileProgram_p(prog, 3, options);
  std::size_t log_size = 0;
  lib.nvrtcGetProgramLogSize_p(prog, &log_size);
  result.log.resize(log_size);
  if (log_size > 0) lib.nvrtcGetProgramLog_p(prog, result.log.data());
  while (!result.log.empty() && (result.log.back() == '\0' || result.log.back() == '\n')) {
    result.log.pop_back();
  }
  result.ok = status == NVRTC_SUCCESS;
  if (result.ok) {
    std::size_t size = 0;
    lib.nvrtcGetCUBINSize_p(prog, &size);
    result.cubin.resize(size);
    lib.nvrtcGetCUBIN_p(prog, result.cubin.data());
  }
  lib.nvrtcDestroyProgram_p(&prog);
  return result;
}

namespace {

// $XDG_CACHE_HOME/orchid/nvrtc, else ~/.cache/orchid/nvrtc; empty when neither is set.
std::filesystem::path cubin_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return std::filesystem::path(xdg) / "orchid" / "nvrtc";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::filesystem::path(home) / ".cache" / "orchid" / "nvrtc";
  }
  return {};
}

}  // namespace

NvrtcResult nvrtc_compile_cached(const std::string& source, int arch) {
  const std::filesystem::path dir = cubin_cache_dir();
  int major = 0, minor = 0;
  nvrtc().nvrtcVersion_p(&major, &minor);
  // The key: the source, the architecture and the compiler's version.
  const std::size_t key =
      std::hash<std::string>{}(fmt::format("{}\n// sm_{} nvrtc {}.{}", source, arch, major, minor));
  const std::filesystem::path file = dir / fmt::format("{:016x}-sm_{}.cubin", key, arch);
  std::error_code ec;
  if (!dir.empty() && std::filesystem::is_regular_file(file, ec)) {
    try {
      const std::string bytes = read_regular_file(file.string(), std::int64_t{1} << 30, "cubin");
      if (!bytes.empty()) {
        NvrtcResult cached;
        cached.ok = true;
        cached.cubin.assign(bytes.begin(), bytes.end());
        return cached;
      }
    } catch (const std::exception&) {
      // An unreadable entry is compiled again and replaced.
    }
  }
  NvrtcResult result = nvrtc_compile(source, arch);
  if (result.ok && !dir.empty()) {
    try {
      std::filesystem::create_directories(dir, ec);
      write_file_atomically(file.string(),
                            std::string_view(result.cubin.data(), result.cubin.size()));
    } catch (const std::exception&) {
      // No cache where the cache folder is not writable: compiling is still correct.
    }
  }
  return result;
}

}  // namespace orchid::codegen
