// The workload's parts: layer formulas, the case-file parser's errors, H2H layer indices.
#include <gtest/gtest.h>

#include "error_message.hpp"
#include "mapping/case_file.hpp"
#include "mapping/workload.hpp"
#include "util/error.hpp"

namespace orchid::mapping {
namespace {

using orchid::testing::error_of;

TEST(MappingWorkloadParts, ConvFormulasByHand) {
  Layer l;
  l.kind = LayerKind::Conv;
  l.m = 8, l.n = 3, l.r = 4, l.c = 5, l.k = 3, l.s = 1, l.batch = 2;
  EXPECT_DOUBLE_EQ(l.weight_elements(), 8 * 3 * 3 * 3);
  EXPECT_DOUBLE_EQ(l.output_elements(), 2.0 * 8 * 4 * 5);
  // ((R - 1) S + K) x ((C - 1) S + K) input pixels per channel.
  EXPECT_DOUBLE_EQ(l.input_elements(), 2.0 * 3 * (3 + 3) * (4 + 3));
  EXPECT_DOUBLE_EQ(l.ops(), 2.0 * (2.0 * 8 * 3 * 9 * 4 * 5));
  l.in_elems = 7;  // extraction's measured count wins
  EXPECT_DOUBLE_EQ(l.input_elements(), 14);
}

TEST(MappingWorkloadParts, MatMulAndLstmFormulasByHand) {
  Layer mm;
  mm.kind = LayerKind::MatMul;
  mm.g = 12, mm.m = 4, mm.n = 64, mm.k = 4;
  EXPECT_DOUBLE_EQ(mm.ops(), 2.0 * 12 * 4 * 64 * 4);
  EXPECT_DOUBLE_EQ(mm.weight_elements(), 0);
  Layer lstm;
  lstm.kind = LayerKind::Lstm;
  lstm.hidden = 4, lstm.dimen = 3, lstm.iter = 5;
  EXPECT_DOUBLE_EQ(lstm.weight_elements(), 4.0 * 4 * (4 + 3));
  EXPECT_DOUBLE_EQ(lstm.output_elements(), 5.0 * 4);
}

TEST(MappingWorkloadParts, H2HLayerIndexReadsTheNumberAfterTheLastL) {
  EXPECT_EQ(h2h_layer_index("M2L17", 1), 17);
  EXPECT_EQ(h2h_layer_index("M1L3x", 9), 3);
  EXPECT_EQ(h2h_layer_index("conv_Lx", 9), 9);
  EXPECT_EQ(h2h_layer_index("relu", 4), 4);
  EXPECT_EQ(h2h_layer_index("M1L", 5), 5);
  EXPECT_EQ(h2h_layer_index("M1L99999999999999", 6), 6);  // out of range: no throw
}

TEST(MappingWorkloadParts, CaseErrorsNameFileAndKey) {
  const std::string name = error_of([] {
    parse_case("[[modality]]\nlayers = [{ name = 3, type = \"fc\", M = 1, N = 1 }]\n", "n.toml", 1);
  });
  EXPECT_NE(name.find("n.toml"), std::string::npos) << name;
  EXPECT_NE(name.find("'name'"), std::string::npos) << name;
  const std::string edge = error_of([] {
    parse_case("edge = 3\n[[modality]]\nlayers = [{ type = \"fc\", M = 1, N = 1 }]\n", "e.toml", 1);
  });
  EXPECT_NE(edge.find("e.toml"), std::string::npos) << edge;
  EXPECT_NE(edge.find("'edge'"), std::string::npos) << edge;
  const std::string missing = error_of([] {
    parse_case("[[modality]]\nlayers = [{ type = \"conv\", M = 1, N = 1, R = 1, C = 1 }]\n",
               "m.toml", 1);
  });
  EXPECT_NE(missing.find("m.toml"), std::string::npos) << missing;
  EXPECT_NE(missing.find("'K'"), std::string::npos) << missing;
  const std::string none = error_of([] { parse_case("name = \"x\"\n", "z.toml", 1); });
  EXPECT_NE(none.find("'modality'"), std::string::npos) << none;
  const std::string syntax = error_of([] { parse_case("[[modality]\n", "s.toml", 1); });
  EXPECT_NE(syntax.find("s.toml:1"), std::string::npos) << syntax;
}

TEST(MappingWorkloadParts, LinkIsStableAndRejectsCycles) {
  Workload w;
  w.name = "w";
  for (const char* n : {"a", "b", "c"}) {
    Layer l;
    l.name = n;
    w.layers.push_back(l);
  }
  w.layers[0].preds = {2};  // c -> a: c must move first, b keeps its place after a
  w.link();
  EXPECT_EQ(w.layers[0].name, "b");
  EXPECT_EQ(w.layers[1].name, "c");
  EXPECT_EQ(w.layers[2].name, "a");
  EXPECT_EQ(w.layers[2].preds, (std::vector<int>{1}));
  EXPECT_EQ(w.layers[1].succs, (std::vector<int>{2}));
  w.layers[1].preds = {2};
  const std::string msg = error_of([&] { w.link(); });
  EXPECT_NE(msg.find("cycle"), std::string::npos) << msg;
}

}  // namespace
}  // namespace orchid::mapping
