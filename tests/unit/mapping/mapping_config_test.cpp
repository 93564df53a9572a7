// System and workload files: validation errors name the file and the key at fault.
#include <gtest/gtest.h>

#include "error_message.hpp"
#include "mapping/case_file.hpp"
#include "mapping/system.hpp"
#include "mapping/workload.hpp"
#include "test_config_roots.hpp"
#include "util/error.hpp"

namespace orchid::mapping {
namespace {

// Files a system names resolve relative to it, inside the config tree: test systems
// are parsed as if they lived in configs/systems/.
const std::string kLib = "../designs/fpga_library.toml";
std::string systems_dir(const std::string& file) {
  return std::string(ORCHID_SOURCE_DIR) + "/configs/systems/" + file;
}

std::string system_text(const std::string& designs, const std::string& host) {
  return "name = \"t\"\ndesign_library = \"" + kLib + "\"\n" + designs +
         "\n[devices]\nfpga = 2\n[bandwidth]\nintra_group_gbs = 5\ninter_group_gbs = 1\nhost_gbs "
         "= " +
         host + "\n";
}

using orchid::testing::error_of;

TEST(MappingConfig, LoadsTheShippedSystems) {
  for (const char* name : {"fpga4", "fpga8", "fpga16", "h2h_example", "fpga4_gpu"}) {
    const System s =
        load_system(std::string(ORCHID_SOURCE_DIR) + "/configs/systems/" + name + ".toml");
    EXPECT_GT(s.total_devices(), 0) << name;
    EXPECT_FALSE(s.designs.empty()) << name;
  }
}

TEST(MappingConfig, UnknownDesignNamesFileAndKey) {
  const std::string msg = error_of([] {
    parse_system(system_text("designs = [\"cnn_acc_99\"]", "1"), systems_dir("sys.toml"));
  });
  EXPECT_NE(msg.find("sys.toml"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'designs'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cnn_acc_99"), std::string::npos) << msg;
}

TEST(MappingConfig, NegativeBandwidthNamesFileAndKey) {
  const std::string msg =
      error_of([] { parse_system(system_text("", "-2"), systems_dir("neg.toml")); });
  EXPECT_NE(msg.find("neg.toml"), std::string::npos) << msg;
  EXPECT_NE(msg.find("host_gbs"), std::string::npos) << msg;
}

TEST(MappingConfig, DesignLibraryErrors) {
  const std::string msg = error_of([] {
    parse_design_library(
        "[[design]]\nid = \"x\"\ntype = \"FC\"\nsupports = [\"warp\"]\n"
        "throughput_gops = 1\nfreq_mhz = 1\ndram_gb = 1\nweight_fraction = 0.5\n"
        "port_bits = 64\n",
        "lib.toml");
  });
  EXPECT_NE(msg.find("lib.toml"), std::string::npos) << msg;
  EXPECT_NE(msg.find("supports"), std::string::npos) << msg;
  EXPECT_NE(msg.find("warp"), std::string::npos) << msg;
}

TEST(MappingConfig, UnsupportedLayerTypeNamesFileKeyAndLayer) {
  const std::string msg = error_of([] {
    parse_case("[[modality]]\nlayers = [{ name = \"A1\", type = \"transformer\", M = 1 }]\n",
               "case.toml", 1);
  });
  EXPECT_NE(msg.find("case.toml"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'type'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("A1"), std::string::npos) << msg;
}

TEST(MappingWorkload, CaseFileChainsAndFusionEdges) {
  const Workload w = parse_case(
      "[[modality]]\nlayers = [{ type = \"conv\", M = 8, N = 3, R = 4, C = 4, K = 3 },"
      " { type = \"fc\", M = 2, N = 128 }]\n[[modality]]\nlayers = [{ type = \"lstm\", Hidden = 4,"
      " Dimen = 4, Iter = 3 }]\n[[edge]]\nfrom = \"M2L1\"\nto = \"M1L2\"\n",
      "c.toml", 2);
  ASSERT_EQ(w.layers.size(), 3u);
  EXPECT_EQ(w.layers.back().name, "M1L2");  // after both of its inputs
  EXPECT_EQ(w.layers.back().preds.size(), 2u);
  EXPECT_EQ(w.layers[0].batch, 2);
}

TEST(MappingWorkload, ExtractsLayersFromOnnx) {
  const Workload w =
      load_workload(std::string(ORCHID_MODELS_DIR) + "/tiny_conv.onnx", 2, test::source_configs());
  ASSERT_FALSE(w.layers.empty());
  bool conv = false;
  for (const Layer& l : w.layers) conv |= l.kind == LayerKind::Conv;
  EXPECT_TRUE(conv);
  EXPECT_EQ(w.batch, 2);
}

}  // namespace
}  // namespace orchid::mapping
