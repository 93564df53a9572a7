// Every #include "folder/..." in src/<layer>/ names a folder that layer may see: its own or
// one linked below it (the links in build/layer_includes/<layer>/, made by
// src/CMakeLists.txt). The build already fails on an upward include in a .cpp; this also
// catches one in a header that no file of its own layer includes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

namespace fs = std::filesystem;

TEST(LayerOrder, EveryIncludeNamesAVisibleFolder) {
  const fs::path src = fs::path(ORCHID_SOURCE_DIR) / "src";
  const fs::path roots = ORCHID_LAYER_INCLUDES;
  const std::regex include(R"re(^\s*#\s*include\s+"([a-z_]+)/)re");
  std::set<std::string> all_layers;
  for (const auto& layer : fs::directory_iterator(roots)) {
    all_layers.insert(layer.path().filename().string());
  }
  ASSERT_GE(all_layers.size(), 10u);
  int checked = 0;
  for (const auto& layer : all_layers) {
    std::set<std::string> visible;
    for (const auto& link : fs::directory_iterator(roots / layer)) {
      visible.insert(link.path().filename().string());
    }
    for (const auto& entry : fs::recursive_directory_iterator(src / layer)) {
      if (!entry.is_regular_file()) continue;
      const auto ext = entry.path().extension();
      if (ext != ".cpp" && ext != ".hpp") continue;
      std::ifstream in(entry.path());
      std::string line;
      while (std::getline(in, line)) {
        std::smatch m;
        if (!std::regex_search(line, m, include)) continue;
        const std::string folder = m[1];
        if (!all_layers.count(folder) && folder != "cli") continue;  // not a layer
        ++checked;
        EXPECT_TRUE(visible.count(folder))
            << entry.path().string() << " includes " << folder << "/ from layer " << layer;
      }
    }
  }
  EXPECT_GT(checked, 300);
}
