// docs/supported_ops.md lists exactly the ops of the registry: adding or removing an op
// without updating the table fails here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "ir/op_registry.hpp"

namespace orchid {
namespace {

TEST(SupportedOpsDoc, ListsExactlyTheRegisteredOps) {
  const auto doc =
      std::filesystem::path(ORCHID_MODELS_DIR).parent_path() / "docs" / "supported_ops.md";
  std::ifstream in(doc);
  ASSERT_TRUE(in) << doc;
  std::set<std::string> listed;
  std::string line;
  while (std::getline(in, line)) {
    // Table rows "| family (n) | `A`, `B` | notes |": the ops are the second cell.
    if (line.rfind("| ", 0) != 0) continue;
    const auto first = line.find('|', 1);
    const auto second = line.find('|', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string cell = line.substr(first + 1, second - first - 1);
    for (std::size_t open = cell.find('`'); open != std::string::npos;) {
      const std::size_t close = cell.find('`', open + 1);
      if (close == std::string::npos) break;
      listed.insert(cell.substr(open + 1, close - open - 1));
      open = cell.find('`', close + 1);
    }
  }
  const auto ops = supported_op_types();
  EXPECT_EQ(listed, std::set<std::string>(ops.begin(), ops.end()));
}

}  // namespace
}  // namespace orchid
