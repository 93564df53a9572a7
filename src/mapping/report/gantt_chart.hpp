// One SVG Gantt chart writer for every timeline orchid draws (a mapping's predicted
// schedule, a distributed run next to its prediction): rows of bars labelled with their
// layer names, arrows for transfers between rows, a time axis with round ticks in a unit
// that suits the span, and a legend listing exactly the kinds of bar that appear.
#pragma once

#include <string>
#include <vector>

namespace orchid::mapping {

struct GanttKind {
  std::string name;    // legend text: "compute", "weights from host"
  std::string colour;  // SVG colour
  bool thin = false;   // drawn as a narrower bar (secondary activity)
};

struct GanttBar {
  int kind = 0;  // index into GanttChart::kinds
  double start_s = 0;
  double end_s = 0;
  std::string label;    // written on the bar when it fits
  std::string tooltip;  // shown on hover
};

struct GanttRow {
  std::string label;
  std::vector<GanttBar> bars;
};

struct GanttArrow {
  int kind = 0;
  int from_row = 0;
  int to_row = 0;
  double start_s = 0;
  double end_s = 0;
  std::string tooltip;
};

struct GanttChart {
  std::string title;
  std::vector<GanttKind> kinds;
  std::vector<GanttRow> rows;
  std::vector<GanttArrow> arrows;
  double end_s = 0;  // the axis reaches at least this (e.g. the makespan)
};

std::string render_gantt_svg(const GanttChart& chart);

// Round axis ticks for [0, span]: a step of 1, 2 or 5 times a power of ten giving 4 to 10
// intervals; returns the step (the axis ends at the first multiple >= span).
double round_tick_step(double span);

}  // namespace orchid::mapping
