// Gantt charts: round ticks, labelled bars, transfer arrows, a legend of what is drawn.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "mapping/evaluator.hpp"
#include "mapping/report/gantt_chart.hpp"
#include "mapping/report/gantt_svg.hpp"
#include "mapping/system.hpp"

namespace orchid::mapping {
namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(GanttChart, TicksAreRound) {
  EXPECT_DOUBLE_EQ(round_tick_step(1.0), 0.1);
  EXPECT_DOUBLE_EQ(round_tick_step(7.3), 1.0);
  EXPECT_DOUBLE_EQ(round_tick_step(0.0421), 0.005);
  EXPECT_DOUBLE_EQ(round_tick_step(180), 20);
  for (double span : {0.37, 3.0, 12.5, 999.0, 1234.5}) {
    const double step = round_tick_step(span);
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step)));
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 ||
                std::abs(mantissa - 5) < 1e-9)
        << span << " -> " << step;
    EXPECT_GE(span / step, 3.9) << span;
    EXPECT_LE(span / step, 10.0) << span;
  }
}

TEST(GanttChart, LabelsLegendAndArrows) {
  GanttChart c;
  c.title = "t";
  c.kinds = {{"compute", "#0000ff", false},
             {"comm", "#ff8800", true},
             {"sent", "#cc0000", false},
             {"never drawn", "#00ff00", false}};
  c.rows = {
      {"dev 0", {{0, 0, 0.004, "conv1_wide_enough_name", "tip a"}}},
      {"dev 1", {{0, 0.0045, 0.0046, "narrow_layer_name", "tip b"}, {1, 0.005, 0.006, "x", "c"}}}};
  c.arrows = {{2, 0, 1, 0.004, 0.0045, "conv1 -> narrow"}};
  const std::string svg = render_gantt_svg(c);
  // The wide bar carries its layer name; the narrow one only a tooltip.
  EXPECT_NE(svg.find(">conv1_wide_enough_name</text>"), std::string::npos) << svg;
  EXPECT_EQ(svg.find(">narrow_layer_name</text>"), std::string::npos);
  EXPECT_NE(svg.find("<title>tip b</title>"), std::string::npos);
  // Legend: the kinds drawn, not the others.
  EXPECT_NE(svg.find(">compute</text>"), std::string::npos);
  EXPECT_NE(svg.find(">comm</text>"), std::string::npos);
  EXPECT_NE(svg.find(">sent</text>"), std::string::npos);
  EXPECT_EQ(svg.find("never drawn"), std::string::npos);
  // One arrow for the transfer (plus the legend's sample).
  EXPECT_EQ(count(svg, "marker-end=\"url(#arrow)\""), 2);
  // 6 ms span in ms, ticks every 1 ms: 0 1 2 3 4 5 6.
  EXPECT_NE(svg.find("time (ms)"), std::string::npos);
  for (const char* tick : {">0</text>", ">1</text>", ">5</text>", ">6</text>"}) {
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  }
}

TEST(GanttChart, MappingChartDrawsTransfersBetweenGroups) {
  const System sys = parse_system(
      "design_library = \"../designs/fpga_library.toml\"\ndesigns = [\"fc_acc_ese\"]\n"
      "[devices]\nfpga = 2\n[bandwidth]\nintra_group_gbs = 4\ninter_group_gbs = 2\nhost_gbs = 1\n",
      std::string(ORCHID_SOURCE_DIR) + "/configs/systems/t.toml");
  Workload w;
  w.name = "pair";
  for (int i = 0; i < 2; ++i) {
    Layer l;
    l.name = i == 0 ? "first_layer" : "second_layer";
    l.kind = LayerKind::Cheap;
    l.elems = 1 << 20;
    w.layers.push_back(l);
  }
  w.layers[1].preds = {0};
  w.link();
  const Evaluator ev(w, sys);
  Mapping m;
  m.groups = {{0, 1, 0}, {0, 1, 1}};
  m.group_of = {0, 1};
  m.strategy.assign(2, Strategy::None);
  const Schedule s = ev.schedule(m);
  ASSERT_EQ(s.transfers.size(), 1u);
  EXPECT_DOUBLE_EQ(s.transfers[0].start, s.finish[0]);
  EXPECT_DOUBLE_EQ(s.transfers[0].end, s.finish[0] + (1 << 20) * 4.0 / 2e9);
  const std::string svg = gantt_svg(ev, m, s);
  EXPECT_NE(svg.find("first_layer -&gt; second_layer"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">activation to another group</text>"), std::string::npos);
  EXPECT_NE(svg.find("dev 1 G1 fc_acc_ese"), std::string::npos);
}

}  // namespace
}  // namespace orchid::mapping
