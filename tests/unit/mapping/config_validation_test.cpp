// Config files (systems, design libraries, devices, workloads) as untrusted input: every
// number finite and in its stated range, integers where integers are meant, unknown keys
// named, only regular files read, and the files a system names stay in the config tree.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "cost/device_spec.hpp"
#include "mapping/case_file.hpp"
#include "mapping/system.hpp"
#include "mapping/workload.hpp"
#include "test_config_roots.hpp"
#include "util/error.hpp"

namespace orchid {
namespace {

namespace fs = std::filesystem;
using namespace orchid::mapping;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const std::string kSystems = std::string(ORCHID_SOURCE_DIR) + "/configs/systems/";

std::string system_with(const std::string& bandwidth, const std::string& extra = "",
                        const std::string& library = "../designs/fpga_library.toml") {
  return "name = \"t\"\ndesign_library = \"" + library + "\"\n" + extra +
         "\n[devices]\nfpga = 2\n[bandwidth]\n" + bandwidth + "\n";
}

const std::string kGoodBandwidth = "intra_group_gbs = 5\ninter_group_gbs = 1\nhost_gbs = 1";

TEST(ConfigValidation, SystemNumbersAreFiniteAndInRange) {
  EXPECT_NO_THROW(parse_system(system_with(kGoodBandwidth), kSystems + "ok.toml"));
  for (const std::string host : {"inf", "nan", "-inf", "1e-300", "1e300", "0", "-1"}) {
    const std::string msg = error_of([&] {
      parse_system(system_with("intra_group_gbs = 5\ninter_group_gbs = 1\nhost_gbs = " + host),
                   kSystems + "bad.toml");
    });
    EXPECT_NE(msg.find("host_gbs"), std::string::npos) << host << ": " << msg;
    EXPECT_NE(msg.find("bad.toml"), std::string::npos) << msg;
  }
  const std::string fraction = error_of([] {
    parse_system(
        "name = \"t\"\ndesign_library = \"../designs/fpga_library.toml\"\n[devices]\n"
        "fpga = 2.5\n[bandwidth]\n" +
            kGoodBandwidth,
        kSystems + "bad.toml");
  });
  EXPECT_NE(fraction.find("'fpga' must be an integer"), std::string::npos) << fraction;
  const std::string many = error_of([] {
    parse_system(
        "name = \"t\"\ndesign_library = \"../designs/fpga_library.toml\"\n[devices]\n"
        "fpga = 99999999999\n[bandwidth]\n" +
            kGoodBandwidth,
        kSystems + "bad.toml");
  });
  EXPECT_NE(many.find("'fpga'"), std::string::npos) << many;
}

TEST(ConfigValidation, UnknownKeysAreNamed) {
  const std::string top = error_of(
      [] { parse_system(system_with(kGoodBandwidth, "colour = 3"), kSystems + "k.toml"); });
  EXPECT_NE(top.find("unknown key 'colour'"), std::string::npos) << top;
  const std::string bw = error_of(
      [] { parse_system(system_with(kGoodBandwidth + "\nhost_gb = 2"), kSystems + "k.toml"); });
  EXPECT_NE(bw.find("unknown key 'host_gb'"), std::string::npos) << bw;
  EXPECT_NE(bw.find("[bandwidth]"), std::string::npos) << bw;
  const std::string design = error_of([] {
    parse_design_library(
        "[[design]]\nid = \"x\"\ntype = \"FC\"\nsupports = [\"fc\"]\nthroughput_gops = 1\n"
        "freq_mhz = 1\ndram_gb = 1\nweight_fraction = 0.5\nport_bits = 64\nspeed = 3\n",
        "lib.toml");
  });
  EXPECT_NE(design.find("unknown key 'speed'"), std::string::npos) << design;
  const std::string layer = error_of([] {
    parse_case("[[modality]]\nlayers = [{ type = \"fc\", M = 2, N = 3, Q = 1 }]\n", "w.toml", 1);
  });
  EXPECT_NE(layer.find("unknown key 'Q'"), std::string::npos) << layer;
}

TEST(ConfigValidation, DesignAndWorkloadIntegersAreBounded) {
  const std::string port = error_of([] {
    parse_design_library(
        "[[design]]\nid = \"x\"\ntype = \"FC\"\nsupports = [\"fc\"]\nthroughput_gops = 1\n"
        "freq_mhz = 1\ndram_gb = 1\nweight_fraction = 0.5\nport_bits = 1e300\n",
        "lib.toml");
  });
  EXPECT_NE(port.find("'port_bits' must be an integer"), std::string::npos) << port;
  const std::string dim = error_of([] {
    parse_case("[[modality]]\nlayers = [{ type = \"fc\", M = 9223372036854775807, N = 3 }]\n",
               "w.toml", 1);
  });
  EXPECT_NE(dim.find("'M'"), std::string::npos) << dim;
  const std::string real = error_of([] {
    parse_case("[[modality]]\nlayers = [{ type = \"fc\", M = 2.5, N = 3 }]\n", "w.toml", 1);
  });
  EXPECT_NE(real.find("must be an integer"), std::string::npos) << real;
}

TEST(ConfigValidation, DeviceSpecNumbersAreFinite) {
  std::ifstream in(std::string(ORCHID_SOURCE_DIR) + "/configs/devices/cpu.toml");
  const std::string cpu((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NO_THROW(parse_device_spec(cpu, "cpu.toml"));
  for (const std::string value : {"inf", "nan", "1e-300", "1e300"}) {
    std::string bad = cpu;
    const auto at = bad.find("dram_bandwidth_gbs = ");
    ASSERT_NE(at, std::string::npos);
    const auto end = bad.find('#', at);
    bad.replace(at, end - at, "dram_bandwidth_gbs = " + value + "  ");
    const std::string msg = error_of([&] { parse_device_spec(bad, "dev.toml"); });
    EXPECT_NE(msg.find("dram_bandwidth_gbs"), std::string::npos) << value << ": " << msg;
  }
}

class ConfigFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("orchid_config_files_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "tree" / "systems");
    fs::create_directories(root_ / "tree" / "designs");
    fs::create_directories(root_ / "elsewhere");
    fs::copy_file(std::string(ORCHID_SOURCE_DIR) + "/configs/designs/fpga_library.toml",
                  root_ / "elsewhere" / "lib.toml");
    fs::copy_file(std::string(ORCHID_SOURCE_DIR) + "/configs/designs/fpga_library.toml",
                  root_ / "tree" / "designs" / "lib.toml");
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string write_system(const std::string& library) {
    const fs::path file = root_ / "tree" / "systems" / "s.toml";
    std::ofstream(file) << system_with(kGoodBandwidth, "", library);
    return file.string();
  }
  fs::path root_;
};

TEST_F(ConfigFiles, NamedFilesStayInTheConfigTree) {
  EXPECT_NO_THROW(load_system(write_system("../designs/lib.toml")));
  fs::create_symlink(root_ / "elsewhere" / "lib.toml", root_ / "tree" / "designs" / "link.toml");
  for (const std::string& library : std::vector<std::string>{
           "../../elsewhere/lib.toml", (root_ / "elsewhere" / "lib.toml").string(),
           "../designs/link.toml"}) {
    const std::string msg = error_of([&] { load_system(write_system(library)); });
    EXPECT_NE(msg.find("design_library"), std::string::npos) << library << ": " << msg;
    EXPECT_TRUE(msg.find("outside") != std::string::npos ||
                msg.find("absolute") != std::string::npos)
        << library << ": " << msg;
  }
  const std::string device = error_of([&] {
    const fs::path file = root_ / "tree" / "systems" / "g.toml";
    std::ofstream(file) << "design_library = \"../designs/lib.toml\"\n[devices]\nfpga = 1\n"
                           "gpu = [{ device = \"../../../etc/passwd\" }]\n[bandwidth]\n" +
                               kGoodBandwidth + "\n";
    load_system(file.string());
  });
  EXPECT_NE(device.find("outside"), std::string::npos) << device;
}

TEST_F(ConfigFiles, OnlyRegularFilesAreRead) {
  const fs::path fifo = root_ / "fifo.toml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path :
       std::vector<std::string>{fifo.string(), "/dev/zero", root_.string()}) {
    EXPECT_NE(error_of([&] { load_system(path); }).find("only regular files"), std::string::npos)
        << path;
    EXPECT_NE(error_of([&] { load_case_file(path, 1); }).find("only regular files"),
              std::string::npos)
        << path;
    EXPECT_NE(error_of([&] {
                load_device_spec(path, test::source_configs());
              }).find("only regular files"),
              std::string::npos)
        << path;
  }
}

}  // namespace
}  // namespace orchid
