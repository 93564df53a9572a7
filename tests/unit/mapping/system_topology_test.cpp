// System files for architects: [topology] (host link per device, links per device pair)
// priced by the evaluator, devices named or pathed like --device, --system by name, and
// unknown keys refused naming key and file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "error_message.hpp"
#include "mapping/evaluator.hpp"
#include "mapping/system.hpp"
#include "test_config_roots.hpp"

namespace orchid::mapping {
namespace {

namespace fs = std::filesystem;
using orchid::testing::error_of;

const std::string kRoot = ORCHID_SOURCE_DIR;
const std::string kHere = kRoot + "/configs/systems/topo.toml";  // where test systems "live"

std::string four_fpgas(const std::string& extra) {
  return "design_library = \"../designs/fpga_library.toml\"\n"
         "designs = [\"cnn_acc_7\", \"fc_acc_ese\"]\n[devices]\nfpga = 4\n"
         "[bandwidth]\nintra_group_gbs = 4\ninter_group_gbs = 2\nhost_gbs = 1\n" +
         extra;
}

// A -> B, cheap layers of 1000 and 2000 elements.
Workload chain() {
  Workload w;
  w.name = "chain";
  for (int i = 0; i < 2; ++i) {
    Layer l;
    l.name = std::string(1, static_cast<char>('A' + i));
    l.kind = LayerKind::Cheap;
    l.elems = 1000 * (i + 1);
    w.layers.push_back(l);
  }
  w.layers[1].preds = {0};
  w.link();
  return w;
}

TEST(SystemTopology, ListedLinksAndHostLinksPriceTransfers) {
  const System plain = parse_system(four_fpgas(""), kHere);
  const System topo = parse_system(four_fpgas("[topology]\nhost_gbs = [1, 0.5, 1, 1]\n"
                                              "[[topology.link]]\ndevices = [2, 0]\n"
                                              "gbs = 10\nlatency_us = 3\n"
                                              "[[topology.link]]\ndevices = [2, 3]\n"
                                              "gbs = 0.5\n"),
                                   kHere);
  ASSERT_EQ(topo.links.size(), 2u);
  EXPECT_EQ(topo.link_between(0, 2), topo.link_between(2, 0));
  EXPECT_EQ(topo.link_between(0, 1), nullptr);
  const Workload w = chain();
  const Evaluator ev_plain(w, plain);
  const Evaluator ev(w, topo);
  const Group g0{0, 1, 0}, g1{0, 1, 1}, g2{0, 1, 2}, g01{0, 2, 0}, g23{0, 2, 2};
  const double bytes = 1e6;
  // Unlisted pairs keep the global figures, so existing systems price as before.
  EXPECT_DOUBLE_EQ(ev.transfer_seconds(bytes, g0, g1), bytes / 2e9);
  EXPECT_DOUBLE_EQ(ev_plain.transfer_seconds(bytes, g0, g2), bytes / 2e9);
  EXPECT_DOUBLE_EQ(ev.transfer_seconds(bytes, g0, g2), 3e-6 + bytes / 10e9);
  EXPECT_DOUBLE_EQ(ev.transfer_seconds(bytes, g2, g0), 3e-6 + bytes / 10e9);
  // Between groups, the fastest listed link between any two members.
  EXPECT_DOUBLE_EQ(ev.transfer_seconds(bytes, g01, g23), 3e-6 + bytes / 10e9);
  EXPECT_DOUBLE_EQ(ev.transfer_seconds(bytes, g01, g01), 0);
  // A group's host link is its slowest member's; its ring its slowest link.
  EXPECT_DOUBLE_EQ(ev.host_gbs(g0), 1);
  EXPECT_DOUBLE_EQ(ev.host_gbs(g01), 0.5);
  EXPECT_DOUBLE_EQ(ev_plain.host_gbs(g01), 1);
  EXPECT_DOUBLE_EQ(ev.ring_gbs(g01), 4);
  EXPECT_DOUBLE_EQ(ev.ring_gbs(g23), 0.5);
  EXPECT_DOUBLE_EQ(ev_plain.ring_gbs(g23), 4);

  // The makespan of A on device 0, B on device 2 uses the link, not the global figure.
  Mapping m;
  m.groups = {g0, g2};
  m.group_of = {0, 1};
  m.strategy.assign(2, Strategy::None);
  const double ca = ev.compute_seconds(0, 0, 1, Strategy::None);
  const double cb = ev.compute_seconds(1, 0, 1, Strategy::None);
  const double expected = 4000 / 1e9 + ca + 3e-6 + 4000 / 10e9 + cb + 8000 / 1e9;
  EXPECT_DOUBLE_EQ(ev.makespan(m), expected);
  // The same schedule but for the one transfer: the link's latency outweighs its speed here.
  EXPECT_NEAR(ev.makespan(m) - ev_plain.makespan(m), 3e-6 + 4000 / 10e9 - 4000 / 2e9, 1e-15);
}

TEST(SystemTopology, BadTopologyNamesFileAndKey) {
  struct Case {
    std::string text, expect;
  };
  for (const Case& c : std::vector<Case>{
           {"[topology]\nhost_gb = [1, 1, 1, 1]\n", "unknown key 'host_gb'"},
           {"[topology]\nhost_gbs = [1, 1]\n", "one number per device (4 devices)"},
           {"[topology]\nhost_gbs = [1, 1, 1, -1]\n", "device 3"},
           {"[[topology.link]]\ndevices = [0, 4]\ngbs = 1\n", "[0, 3]"},
           {"[[topology.link]]\ndevices = [1, 1]\ngbs = 1\n", "two different devices"},
           {"[[topology.link]]\ndevices = [0, 1]\ngbs = 1\n[[topology.link]]\ndevices = [1, 0]\n"
            "gbs = 2\n",
            "linked twice"},
           {"[[topology.link]]\ndevices = [0, 1]\n", "missing key 'gbs'"},
           {"[[topology.link]]\ndevices = [0, 1]\ngbs = 1\nlatency = 2\n", "unknown key 'latency'"},
           {"[[topology.link]]\ndevices = [0, 1]\ngbs = 1\nlatency_us = -2\n", "latency_us"},
       }) {
    const std::string msg = error_of([&] { parse_system(four_fpgas(c.text), kHere); });
    EXPECT_NE(msg.find("topo.toml"), std::string::npos) << c.text << ": " << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.text << ": " << msg;
  }
  const std::string table =
      error_of([] { parse_system("topology = 3\n" + four_fpgas(""), kHere); });
  EXPECT_NE(table.find("'topology' must be a table"), std::string::npos) << table;
}

TEST(SystemTopology, UnknownKeysAnywhereAreErrors) {
  const std::string top = error_of([] { parse_system("bandwith = 3\n" + four_fpgas(""), kHere); });
  EXPECT_NE(top.find("unknown key 'bandwith'"), std::string::npos) << top;
  EXPECT_NE(top.find("topo.toml"), std::string::npos) << top;
  // A CPU cluster's [network] fits are checked like any other system's.
  const std::string net = error_of([] {
    parse_system(
        "[devices.cpu]\nranks = 2\n[bandwidth]\nintra_group_gbs = 1\ninter_group_gbs = 1\n"
        "host_gbs = 1\n[network.p2p]\ngbs = 1\nlatency_us = 1\nrms = 0\n",
        kHere, test::source_configs());
  });
  EXPECT_NE(net.find("unknown key 'rms'"), std::string::npos) << net;
}

class SystemFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("orchid_system_files_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "tree" / "systems");
    fs::create_directories(root_ / "tree" / "designs");
    fs::create_directories(root_ / "tree" / "devices");
    fs::copy_file(kRoot + "/configs/designs/fpga_library.toml",
                  root_ / "tree" / "designs" / "fpga_library.toml");
    fs::copy_file(kRoot + "/configs/devices/a100.toml", root_ / "tree" / "devices" / "mygpu.toml");
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string write(const std::string& device) {
    const fs::path file = root_ / "tree" / "systems" / "g.toml";
    std::ofstream(file) << four_fpgas("").insert(four_fpgas("").find("[bandwidth]"),
                                                 "gpu = [{ device = \"" + device + "\" }]\n");
    return file.string();
  }
  fs::path root_;
};

TEST_F(SystemFiles, DevicesByNameOrPathLikeTheDeviceOption) {
  // A name: devices/ beside the system's folder first, then the config roots.
  const System own = load_system(write("mygpu"), test::source_configs());
  ASSERT_EQ(own.gpu_designs.size(), 1u);
  EXPECT_EQ(own.designs[own.gpu_designs[0]].id, "gpu:mygpu");
  const System from_roots = load_system(write("h100"), test::source_configs());
  EXPECT_EQ(from_roots.designs[from_roots.gpu_designs[0]].gpu.spec_path,
            kRoot + "/configs/devices/h100.toml");
  // A path, relative to the system file (a .toml name or anything with '/').
  const System pathed = load_system(write("../devices/mygpu.toml"), test::source_configs());
  EXPECT_EQ(pathed.designs[pathed.gpu_designs[0]].gpu.peak_fp32_gflops,
            own.designs[own.gpu_designs[0]].gpu.peak_fp32_gflops);
  // Absolute paths, and paths out of the config tree, are refused by name (no
  // ".../devices/abs/path/a100.toml.toml" guesswork).
  const std::string abs = error_of(
      [&] { load_system(write(kRoot + "/configs/devices/a100.toml"), test::source_configs()); });
  EXPECT_NE(abs.find("'device'"), std::string::npos) << abs;
  EXPECT_NE(abs.find("absolute"), std::string::npos) << abs;
  const std::string unknown =
      error_of([&] { load_system(write("a1000"), test::source_configs()); });
  EXPECT_NE(unknown.find("unknown device 'a1000'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("a100, "), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("g.toml"), std::string::npos) << unknown;
  // A device file with a misspelt key is refused as `--device` refuses it.
  std::ofstream(root_ / "tree" / "devices" / "bad.toml")
      << "dram_bandwidth_gbs = 1\npeak_fp32_gflops = 1\nlaunch_overhead_us = 1\nspeed = 3\n";
  const std::string bad = error_of([&] { load_system(write("bad"), test::source_configs()); });
  EXPECT_NE(bad.find("bad.toml"), std::string::npos) << bad;
}

TEST(SystemByName, SystemOptionTakesANameOrAPath) {
  EXPECT_EQ(fs::path(find_system("fpga4", test::source_configs())),
            fs::path(kRoot) / "configs" / "systems" / "fpga4.toml");
  EXPECT_EQ(find_system("my/own.toml", test::source_configs()), "my/own.toml");
  const std::string msg = error_of([] { find_system("fpga5", test::source_configs()); });
  EXPECT_NE(msg.find("unknown system 'fpga5'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fpga4"), std::string::npos) << msg;
}

TEST(SystemByName, ShippedSystemsStillLoad) {
  for (const std::string& name : test::source_configs().names_in("systems", ".toml")) {
    EXPECT_NO_THROW(load_system(find_system(name, test::source_configs()), test::source_configs()))
        << name;
  }
}

}  // namespace
}  // namespace orchid::mapping
